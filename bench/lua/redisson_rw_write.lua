-- Write acquire of the reader-preferring RW lock in Redisson's format (see
-- redisson_rw_read.lua): granted only when nobody holds the lock, or as a
-- re-entry of the same writer.
-- KEYS[1] lock hash. ARGV[1] lease ms, ARGV[2] write field.
-- Returns nil when granted, else the lock's PTTL.
local lock = KEYS[1]
local lease, writer = tonumber(ARGV[1]), ARGV[2]

local mode = redis.call('hget', lock, 'mode')
if not mode then
  redis.call('hset', lock, 'mode', 'write', writer, 1)
  redis.call('pexpire', lock, lease)
  return false
end
if mode == 'write' and redis.call('hexists', lock, writer) == 1 then
  redis.call('hincrby', lock, writer, 1)
  redis.call('pexpire', lock, redis.call('pttl', lock) + lease)
  return false
end
return redis.call('pttl', lock)
