-- Library (see script.go): the fencing token. Tokens follow the server
-- clock, in microseconds, so a new hold's token rises above every earlier
-- one even when the counter is lost (a restart without data, a failover
-- that lost the last increments); the counter keeps them rising when the
-- clock stands still or steps back.

-- formatToken prints a token: they are around 1.7e15 (microseconds), which
-- Lua numbers hold exactly but '..' would print as floats.
local function formatToken(token)
  return string.format('%d', token)
end

-- clockToken is the server clock in microseconds.
local function clockToken()
  local now = redis.call('time')
  return tonumber(now[1]) * 1000000 + tonumber(now[2])
end

-- nextToken is the token of a new hold: the larger of the counter's next
-- value and the clock. last is the counter's value if the caller has read
-- it (false when it is missing), nil if not; clock is the clock
-- (clockToken) if the caller has read it in this script, nil if not. It
-- writes nothing.
local function nextToken(fence, last, clock)
  if last == nil then
    last = redis.call('get', fence)
  end
  return math.max(tonumber(last or 0) + 1, clock or clockToken())
end

-- takeToken writes the token of a new hold to the counter and returns it:
-- the counter is read and written in one SET ... GET, and written again
-- only when it is ahead of the clock.
local function takeToken(fence)
  local token = clockToken()
  local last = tonumber(redis.call('set', fence, formatToken(token), 'get') or 0)
  if last >= token then
    token = last + 1
    redis.call('set', fence, formatToken(token))
  end
  return token
end
