-- Library (see script.go): the replay record of a script whose reply is a
-- list of whole numbers, so that a resent call (go-redis resends on a read
-- timeout) returns the first run's reply instead of acting again. The
-- numbers may be tokens or hold IDs (around 1.7e15), or negative (a set's
-- release, release_set.lua), so they are stored as formatToken prints
-- them, separated by spaces.

-- replayed is the reply the request key req remembers, or nil.
local function replayed(req)
  local seen = redis.call('get', req)
  if not seen then
    return nil
  end
  local reply = {}
  for n in string.gmatch(seen, '%-?%d+') do
    reply[#reply + 1] = tonumber(n)
  end
  return reply
end

-- remember keeps reply for requestMs under req, and returns it.
local function remember(req, reply, requestMs)
  local printed = {}
  for i, n in ipairs(reply) do
    printed[i] = formatToken(n)
  end
  redis.call('set', req, table.concat(printed, ' '), 'px', requestMs)
  return reply
end
