-- Library (see script.go): the fencing token. Tokens follow the server
-- clock, in microseconds, so a new hold's token rises above every earlier
-- one even when the counter is lost (a restart without data, a failover
-- that lost the last increments); the counter keeps them rising when the
-- clock stands still or steps back.

-- maxToken is the largest token: tokens are Lua numbers (doubles), exact
-- up to 2^53, so past maxToken a counter's next value would round to the
-- counter itself (tokens stop rising) and, near 2^63, print as another
-- number than the one returned (the hold is then unknown by its token).
-- 2^53 µs is in the year 2255: only a counter set far ahead gets there.
local maxToken = 2 ^ 53 - 1

-- tokenOverflow fails the script because the counter at fence has no
-- exact next value. The reply's code, TOKENRANGE, is what the client knows
-- it by (reentrant.ErrTokenOverflow).
local function tokenOverflow(fence)
  error({err = 'TOKENRANGE baton: no exact token follows counter ' .. fence .. ' (tokens end at 2^53-1)'})
end

-- exactToken is token, a new token or hold ID counted at fence, or fails
-- the script (tokenOverflow) when token is past maxToken. Every new token
-- is checked where it is made, before the script writes what names it.
local function exactToken(fence, token)
  if token > maxToken then
    tokenOverflow(fence)
  end
  return token
end

-- formatToken prints a token: they are around 1.7e15 (microseconds), which
-- Lua numbers hold exactly but '..' would print as floats.
local function formatToken(token)
  return string.format('%d', token)
end

-- clockToken is the server clock in microseconds, and the same number as
-- formatToken prints it, made of TIME's digits: printing costs a free
-- acquire more server time than the TIME itself.
local function clockToken()
  local now = redis.call('time')
  local digits = now[1] .. string.rep('0', 6 - #now[2]) .. now[2]
  return tonumber(digits), digits
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
  return exactToken(fence, math.max(tonumber(last or 0) + 1, clock or clockToken()))
end

-- fenceUntil is when the counter may expire once it holds token, the
-- token of a hold of leaseMs, in server ms: two leases past the token's
-- time. So the counter outlives the hold's lease (its hold starts at or
-- before the token's time), and, gone, is below the clock by then: the
-- clock floor keeps the next token above it (see the package doc's
-- Footprint).
local function fenceUntil(token, leaseMs)
  return formatToken(math.floor(token / 1000) + 2 * tonumber(leaseMs))
end

-- setFence writes token, the token of a hold of leaseMs, to the counter,
-- to expire at fenceUntil.
local function setFence(fence, token, leaseMs)
  redis.call('set', fence, formatToken(token), 'pxat', fenceUntil(token, leaseMs))
end

-- keepFence makes the counter outlive a lease of leaseMs from now, which a
-- hold it names now has (a re-entry, a confirmation, a renewal): it is
-- raised to two leases, never shortened.
local function keepFence(fence, leaseMs)
  redis.call('pexpire', fence, 2 * tonumber(leaseMs), 'gt')
end

-- takeToken writes the token of a new hold of leaseMs to the counter
-- (setFence) and returns it: the counter is read and written in one
-- SET ... GET, and written again only when it is ahead of the clock. A
-- counter with no exact next token (see maxToken) is put back as it was
-- and the script fails (tokenOverflow), having written nothing else.
local function takeToken(fence, leaseMs)
  local token, digits = clockToken()
  local was = redis.call('set', fence, digits, 'pxat', fenceUntil(token, leaseMs), 'get')
  local last = tonumber(was or 0)
  if last >= token then
    if last >= maxToken then
      -- Put back with no expiry: its time is past the year 2255, so it
      -- would have outlived any hold of this lock anyway.
      redis.call('set', fence, was)
      tokenOverflow(fence)
    end
    token = last + 1
    setFence(fence, token, leaseMs)
  end
  return token
end
