-- Leave one hold of a reentrant lock.
-- KEYS[1] lock hash, KEYS[2] release channel, KEYS[3] request key,
-- KEYS[4] fencing counter
-- ARGV[1] owner, ARGV[2] the hold's token, ARGV[3] request-key TTL in ms,
-- ARGV[4] 'publish' or 'spublish', ARGV[5] message
-- Returns the owner's remaining hold count (0 = released and published),
-- or -1 when ARGV[1] does not hold the lock under token ARGV[2].
local done = redis.call('get', KEYS[3])
if done then
  return tonumber(done)
end

local count = tonumber(redis.call('hget', KEYS[1], ARGV[1]))
-- The token tells holds apart: a release meant for a hold that expired must
-- not release the same owner's next hold.
if not count or redis.call('get', KEYS[4]) ~= ARGV[2] then
  return -1
end

count = count - 1
if count > 0 then
  -- The lease is left as it is: the remaining holds were promised at
  -- least what the longest of them asked for, and re-entry never shortens.
  redis.call('hincrby', KEYS[1], ARGV[1], -1)
else
  -- Publish before the first write: a missing channel permission then
  -- aborts the script while the lock is still intact.
  redis.call(ARGV[4], KEYS[2], ARGV[5])
  redis.call('del', KEYS[1])
end
redis.call('set', KEYS[3], count, 'px', ARGV[3])
return count
