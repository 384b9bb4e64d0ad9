-- A waiter gives up: it leaves the queue, or, if it was granted the lock in
-- the meantime, passes the lock on at once (see grant).
-- KEYS[1] lock hash, KEYS[2] fencing counter, KEYS[3] queue, KEYS[4] granted
-- ARGV[1] waiter ID, ARGV[2] the waiter's owner, ARGV[3] 'publish',
-- 'spublish' or 'publish-alive', ARGV[4] the waiter's queue record,
-- ARGV[5] '1' when the owner is shared (not made for this one call)
-- Returns 0 when it left the queue (or was in none), 1 when it had been
-- granted the lock and passed it on, 2 when it had been granted the lock
-- and freed it, granting nobody but leaving entries in the queue (see
-- grant): the client runs pass.lua.
local hash, fence, queue, granted = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
if redis.call('lrem', queue, 1, ARGV[4]) == 1 then
  return 0
end
local token = redis.call('get', fence)
-- An owner made for this one call holds the lock only through its grant; a
-- shared one may hold it through another call, so its grant is checked.
if not token or redis.call('hget', hash, ARGV[2]) ~= '1' then
  return 0
end
if ARGV[5] == '1' then
  if redis.call('get', granted) ~= ARGV[1] .. ' ' .. token then
    return 0
  end
  redis.call('del', granted)
end
local id, _, left = grant(hash, fence, queue, granted, ARGV[3], '', token)
if id then
  return 1
end
redis.call('del', hash)
return left and 2 or 1
