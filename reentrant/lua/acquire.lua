-- Take or re-enter a reentrant lock.
-- KEYS[1] lock hash (field = owner, value = hold count)
-- KEYS[2] fencing counter
-- KEYS[3] request key: remembers this request's result so a retried call replays it
-- ARGV[1] owner, ARGV[2] lease in ms, ARGV[3] request-key TTL in ms,
-- ARGV[4] '1' when the owner ID was made for this one call,
-- ARGV[5] the token of the hold to re-enter, or '0' to take or re-enter any
-- Returns {1, holdCount, token} when ARGV[1] holds the lock after the call,
--         {0, pttl} when another owner holds it,
--         {-1} when ARGV[5] names a hold that no longer exists.
-- Tokens are around 1.7e15 (microseconds, see below): Lua numbers hold
-- them exactly, but '..' would print them as floats, so they are formatted
-- with %d.
local count = redis.call('hget', KEYS[1], ARGV[1])
if count then
  local fence = redis.call('get', KEYS[2])
  if ARGV[4] == '1' then
    -- A new owner can only hold the lock through an earlier run of this
    -- same call (a resent command): report that hold, count nothing.
    return {1, tonumber(count), tonumber(fence or 0)}
  end
  local done = redis.call('get', KEYS[3])
  if done then
    local c, t = string.match(done, '^(%d+):(%d+)$')
    return {1, tonumber(c), tonumber(t)}
  end
  -- The lock is exclusive, so the counter's value is the current hold's
  -- token. A re-entry into a hold that has since ended (and been taken
  -- again by the same owner elsewhere) must not join the new hold.
  if ARGV[5] ~= '0' and fence ~= ARGV[5] then
    return {-1}
  end
  count = redis.call('hincrby', KEYS[1], ARGV[1], 1)
  local token = tonumber(fence or 0)
  -- Re-entry never shortens the lease an outer hold already has.
  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[2]) then
    redis.call('pexpire', KEYS[1], ARGV[2])
  end
  redis.call('set', KEYS[3], string.format('%d:%d', count, token), 'px', ARGV[3])
  return {1, count, token}
end
if ARGV[5] ~= '0' then
  return {-1}
end

local pttl = redis.call('pttl', KEYS[1])
if pttl ~= -2 then
  return {0, pttl}
end
redis.call('hset', KEYS[1], ARGV[1], 1)
redis.call('pexpire', KEYS[1], ARGV[2])
-- The token is the larger of the counter's next value and the server clock
-- in microseconds. It rises on every new hold even if the clock steps back,
-- and it stays above every earlier token when the counter was lost (a
-- restart without persistence) or fell behind (a failover that lost the
-- last increments), as long as the servers' clocks agree within the outage.
local now = redis.call('time')
local clock = tonumber(now[1]) * 1000000 + tonumber(now[2])
local token = math.max(tonumber(redis.call('get', KEYS[2]) or 0) + 1, clock)
redis.call('set', KEYS[2], string.format('%d', token))
if ARGV[4] ~= '1' then
  redis.call('set', KEYS[3], string.format('1:%d', token), 'px', ARGV[3])
end
return {1, 1, token}
