-- Release of a lock in Redisson's RLock format (see redisson_lock.lua):
-- one re-entry fewer; the last one deletes the hash and tells the waiters
-- on the lock's channel.
-- KEYS[1] lock hash, KEYS[2] channel.
-- ARGV[1] unlock message, ARGV[2] lease ms, ARGV[3] holder field.
-- Returns 1 when released, 0 when a re-entry remains, nil when not held.
local lock, channel = KEYS[1], KEYS[2]
local message, lease, holder = ARGV[1], ARGV[2], ARGV[3]

if redis.call('hexists', lock, holder) == 0 then
  return false
end
if redis.call('hincrby', lock, holder, -1) > 0 then
  redis.call('pexpire', lock, lease)
  return 0
end
redis.call('del', lock)
redis.call('publish', channel, message)
return 1
