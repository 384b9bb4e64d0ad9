-- Read release of the reader-preferring RW lock in Redisson's format (see
-- redisson_rw_read.lua). While other holders remain, the hash lives on for
-- the longest of their read timeouts; when none remain, it is deleted and
-- every waiter is told on the channel, to try again.
-- KEYS[1] lock hash, KEYS[2] channel, KEYS[3] base of the timeout keys.
-- ARGV[1] unlock message, ARGV[2] reader field.
-- Returns 1 when the lock is now free, 0 when held on, nil when not held.
local lock, channel, base = KEYS[1], KEYS[2], KEYS[3]
local message, reader = ARGV[1], ARGV[2]

local mode = redis.call('hget', lock, 'mode')
if not mode or redis.call('hexists', lock, reader) == 0 then
  return false
end
local n = redis.call('hincrby', lock, reader, -1)
if n == 0 then
  redis.call('hdel', lock, reader)
end
redis.call('del', base .. ':' .. reader .. ':rwlock_timeout:' .. (n + 1))

if redis.call('hlen', lock) > 1 then
  local longest = -3
  for _, field in ipairs(redis.call('hkeys', lock)) do
    local count = tonumber(redis.call('hget', lock, field)) -- nil for 'mode'
    for i = 1, count or 0 do
      longest = math.max(longest, redis.call('pttl', base .. ':' .. field .. ':rwlock_timeout:' .. i))
    end
  end
  if longest > 0 then
    redis.call('pexpire', lock, longest)
    return 0
  end
  if mode == 'write' then
    return 0
  end
end
redis.call('del', lock)
redis.call('publish', channel, message)
return 1
