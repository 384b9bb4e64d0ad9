-- Leave one hold of a reentrant lock.
-- KEYS[1] lock hash, KEYS[2] release channel, KEYS[3] request key
-- ARGV[1] owner, ARGV[2] lease in ms (re-applied while holds remain),
-- ARGV[3] request-key TTL in ms, ARGV[4] 'publish' or 'spublish', ARGV[5] message
-- Returns the owner's remaining hold count (0 = released and published),
-- or -1 when ARGV[1] does not hold the lock.
local done = redis.call('get', KEYS[3])
if done then
  return tonumber(done)
end

local count = tonumber(redis.call('hget', KEYS[1], ARGV[1]))
if not count then
  return -1
end

count = count - 1
if count > 0 then
  redis.call('hincrby', KEYS[1], ARGV[1], -1)
  redis.call('pexpire', KEYS[1], ARGV[2])
else
  -- Publish before the first write: a missing channel permission then
  -- aborts the script while the lock is still intact.
  redis.call(ARGV[4], KEYS[2], ARGV[5])
  redis.call('del', KEYS[1])
end
redis.call('set', KEYS[3], count, 'px', ARGV[3])
return count
