-- Take or re-enter a reentrant lock.
-- KEYS[1] lock hash (field = owner, value = hold count)
-- KEYS[2] fencing counter
-- KEYS[3] request key: remembers this request's result so a retried call replays it
-- ARGV[1] owner, ARGV[2] lease in ms, ARGV[3] request-key TTL in ms
-- Returns {1, holdCount, token} when ARGV[1] holds the lock after the call,
--         {0, pttl} when another owner holds it.
local done = redis.call('get', KEYS[3])
if done and redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
  local count, token = string.match(done, '^(%d+):(%d+)$')
  return {1, tonumber(count), tonumber(token)}
end

if redis.call('hexists', KEYS[1], ARGV[1]) == 0 and redis.call('exists', KEYS[1]) == 1 then
  return {0, redis.call('pttl', KEYS[1])}
end

local count = redis.call('hincrby', KEYS[1], ARGV[1], 1)
local token
if count == 1 then
  token = redis.call('incr', KEYS[2])
  redis.call('pexpire', KEYS[1], ARGV[2])
else
  token = tonumber(redis.call('get', KEYS[2]) or 0)
  -- Re-entry never shortens the lease an outer hold already has.
  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[2]) then
    redis.call('pexpire', KEYS[1], ARGV[2])
  end
end
redis.call('set', KEYS[3], count .. ':' .. token, 'px', ARGV[3])
return {1, count, token}
