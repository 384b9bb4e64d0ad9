-- A waiter gives up: it leaves the queue and the wake records (see
-- enqueue), or, if it was granted the lock in
-- the meantime and has not claimed the grant, gives back the one count the
-- grant gave, passing the lock on at once if that was the last (see
-- passOn).
-- KEYS[1] hash: the lock hash
-- KEYS[2] fence: the fencing-token counter
-- KEYS[3] queue: the waiters
-- KEYS[4] granted: the last grant to a waiter, until it claims it
-- KEYS[5] wake: the wake records (see enqueue)
-- ARGV[1] owner: the waiter's owner
-- ARGV[2] waiter: the waiter's ID
-- ARGV[3] record: the waiter's queue record
-- ARGV[4] publish: 'publish', 'spublish' or 'publish-alive' (see grant)
-- Returns 0 when it left the queue (or was in none, or its grant was
-- claimed or is gone), 1 when it had been granted the lock and gave back
-- its count, 2 when it did, freed the lock and granted nobody but left
-- entries in the queue (see grant): the client runs pass.lua.
local hash, fence, queue, granted, wake = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local owner, waiter, record, publish = ARGV[1], ARGV[2], ARGV[3], ARGV[4]

-- Its wake record goes too, if any. A waiter with neither a record nor a
-- place in the queue, while the lock is free, may have been woken by a
-- release that took its record, and looks no more: the wake-up goes on to
-- another (one that had neither costs one wake-up more).
local recorded = redis.call('zrem', wake, record) == 1
if redis.call('lrem', queue, 1, record) == 1 then
  return 0
end
if not recorded and redis.call('exists', hash) == 0 then
  nudge(wake, publish)
end
local token = redis.call('get', fence)
-- The granted key names the waiter while its grant is unclaimed: a count
-- of the owner's that another call took, or that this waiter's look
-- claimed (its caller gives that back by release), is not this leave's.
if not token or redis.call('get', granted) ~= waiter .. ' ' .. token then
  return 0
end
redis.call('del', granted)
local count = tonumber(redis.call('hget', hash, owner))
if not count then
  return 0 -- the hold ended meanwhile: its lease ran out
end
if count > 1 then
  redis.call('hincrby', hash, owner, -1)
  return 1
end
local left = passOn(hash, fence, queue, granted, publish, token, wake)
return left and 2 or 1
