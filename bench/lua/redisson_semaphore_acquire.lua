-- Acquire of a counter semaphore in Redisson's RSemaphore format, written
-- for the bench from that documented format: the semaphore is a string
-- holding the permits available. Nothing records who holds what: permits
-- of a holder that dies are never given back.
-- KEYS[1] counter. ARGV[1] permits asked for.
-- Returns 1 when taken, 0 when not enough are available.
local available = tonumber(redis.call('get', KEYS[1]))
local asked = tonumber(ARGV[1])
if available and available >= asked then
  redis.call('decrby', KEYS[1], asked)
  return 1
end
return 0
