-- A waiter gives up: it leaves the queue, or, if it was granted the lock in
-- the meantime, passes the lock on at once (see passOn).
-- KEYS[1] hash: the lock hash
-- KEYS[2] fence: the fencing-token counter
-- KEYS[3] queue: the waiters
-- KEYS[4] granted: the last grant to a given owner's waiter
-- ARGV[1] owner: the waiter's owner
-- ARGV[2] waiter: the waiter's ID
-- ARGV[3] record: the waiter's queue record
-- ARGV[4] newOwner: '1' when the owner was made for the waiter's call
-- ARGV[5] publish: 'publish', 'spublish' or 'publish-alive' (see grant)
-- Returns 0 when it left the queue (or was in none), 1 when it had been
-- granted the lock and passed it on, 2 when it had been granted the lock
-- and freed it, granting nobody but leaving entries in the queue (see
-- grant): the client runs pass.lua.
local hash, fence, queue, granted = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, waiter, record, newOwner, publish = ARGV[1], ARGV[2], ARGV[3], ARGV[4] == '1', ARGV[5]

if redis.call('lrem', queue, 1, record) == 1 then
  return 0
end
local token = redis.call('get', fence)
-- An owner made for this one call holds the lock only through its grant; a
-- given one may hold it through another call, so its grant is checked.
if not token or redis.call('hget', hash, owner) ~= '1' then
  return 0
end
if not newOwner then
  if redis.call('get', granted) ~= waiter .. ' ' .. token then
    return 0
  end
  redis.call('del', granted)
end
local left = passOn(hash, fence, queue, granted, publish, token)
return left and 2 or 1
