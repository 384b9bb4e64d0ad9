-- Leave one hold of a lock in Redisson's RLock format, under a request ID
-- whose latch makes a resent call replay its first result, as Redisson's
-- unlock does. A partial unlock keeps the lock for at least leaseMs more
-- (never less than it had: redisson_lease.lua) and publishes nothing; the last one deletes the lock and publishes the
-- unlock message on the lock's channel.
-- KEYS[1] lock: the lock's hash
-- KEYS[2] channel: the lock's channel
-- KEYS[3] latch: the request's unlock latch
-- ARGV[1] field: the holder's field
-- ARGV[2] leaseMs: the lease a partial unlock leaves, in ms
-- ARGV[3] latchMs: how long the latch lasts, in ms
-- ARGV[4] publish: 'publish' or 'spublish'
-- ARGV[5] message: the unlock message
-- Returns -1 when the field does not hold the lock (nothing changed, no
-- latch), else the latch's value: 0 when the field still holds the lock,
-- 1 when it was released. A replay returns the latch's value unchanged.
local lock, channel, latch = KEYS[1], KEYS[2], KEYS[3]
local field, leaseMs, latchMs = ARGV[1], ARGV[2], ARGV[3]
local publish, message = ARGV[4], ARGV[5]

local done = redis.call('get', latch)
if done then
  return tonumber(done)
end
if redis.call('hexists', lock, field) == 0 then
  return -1
end

local result = 1
if redis.call('hincrby', lock, field, -1) > 0 then
  result = 0
  extendLease(lock, leaseMs)
else
  -- Publish before deleting: a missing channel permission fails the script
  -- with the lock as it was.
  redis.call(publish, channel, message)
  redis.call('del', lock)
end
redis.call('set', latch, result, 'px', latchMs)
return result
