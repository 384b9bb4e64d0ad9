-- Library (see script.go): the replay record of a script whose reply is two
-- whole numbers, so that a resent call (go-redis resends on a read timeout)
-- returns the first run's reply instead of acting again. The numbers may be
-- tokens (around 1.7e15), so they are stored as formatToken prints them.

-- replayed is the reply the request key req remembers, or nil.
local function replayed(req)
  local seen = redis.call('get', req)
  if not seen then
    return nil
  end
  local a, b = string.match(seen, '^(%d+) (%d+)$')
  return {tonumber(a), tonumber(b)}
end

-- remember keeps reply for requestMs under req, and returns it.
local function remember(req, reply, requestMs)
  redis.call('set', req, formatToken(reply[1]) .. ' ' .. formatToken(reply[2]), 'px', requestMs)
  return reply
end
