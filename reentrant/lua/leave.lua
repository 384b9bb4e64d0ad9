-- A waiter gives up: it leaves the queue, or, if it was granted the lock in
-- the meantime, passes the lock on at once (see grant).
-- KEYS[1] lock hash, KEYS[2] fencing counter, KEYS[3] queue, KEYS[4]
-- waiters, KEYS[5] granted
-- ARGV[1] waiter ID, ARGV[2] the waiter's owner, ARGV[3] 'publish' or
-- 'spublish'
-- Returns 0 when it left the queue (or was in none), 1 when it had been
-- granted the lock and passed it on.
local hash, fence, queue, waiters, granted = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
if redis.call('hdel', waiters, ARGV[1]) == 1 then
  redis.call('lrem', queue, 1, ARGV[1])
  return 0
end
local token = redis.call('get', fence)
if not token or redis.call('get', granted) ~= ARGV[1] .. ' ' .. token
    or redis.call('hget', hash, ARGV[2]) ~= '1' then
  return 0
end
redis.call('del', granted)
if not grant(hash, fence, queue, waiters, granted, ARGV[3], '') then
  redis.call('del', hash)
end
return 1
