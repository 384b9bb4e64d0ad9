-- Write release of the reader-preferring RW lock in Redisson's format (see
-- redisson_rw_read.lua). When the writer leaves and nobody else holds, the
-- hash is deleted and the waiters are told; reads the writer took inside
-- its write stay, and the mode turns to read.
-- KEYS[1] lock hash, KEYS[2] channel.
-- ARGV[1] unlock message, ARGV[2] lease ms, ARGV[3] write field.
-- Returns 1 when the write is released, 0 when a re-entry remains, nil when
-- not held.
local lock, channel = KEYS[1], KEYS[2]
local message, lease, writer = ARGV[1], tonumber(ARGV[2]), ARGV[3]

if redis.call('hget', lock, 'mode') ~= 'write' or redis.call('hexists', lock, writer) == 0 then
  return false
end
if redis.call('hincrby', lock, writer, -1) > 0 then
  redis.call('pexpire', lock, lease)
  return 0
end
redis.call('hdel', lock, writer)
if redis.call('hlen', lock) == 1 then
  redis.call('del', lock)
  redis.call('publish', channel, message)
else
  redis.call('hset', lock, 'mode', 'read')
end
return 1
