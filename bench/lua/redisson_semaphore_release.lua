-- Release of the counter semaphore in Redisson's format (see
-- redisson_semaphore_acquire.lua): adds the permits back, whoever calls it,
-- and tells every waiter the new count, to try again.
-- KEYS[1] counter, KEYS[2] channel. ARGV[1] permits released.
-- Returns the permits now available.
local available = redis.call('incrby', KEYS[1], ARGV[1])
redis.call('publish', KEYS[2], available)
return available
