-- A waiter of a shared resource gives up: it leaves the queue, or, if
-- it was granted its hold in the meantime, leaves that count of the hold at
-- once, passing on what it frees (see leaveHold).
-- KEYS[1] hash: the holds (see shared.lua)
-- KEYS[2] leases: the holds' lease deadlines
-- KEYS[3] queue: the waiters
-- KEYS[4] fence: the fencing-token counter
-- KEYS[5] ids: the hold-ID counter (see newHoldID)
-- KEYS[6] sizeKey: the semaphore's size; absent for a read-write lock
-- ARGV[1] owner: the waiter's owner
-- ARGV[2] mode: the waiter's mode
-- ARGV[3] waiter: the waiter's ID
-- ARGV[4] record: the waiter's queue record
-- ARGV[5] size: the size to use, and store, when none is stored
-- ARGV[6] publish: 'publish', 'spublish' or 'publish-alive' (see deliver)
-- Returns 0 when it left the queue (or was in none), 1 when it had been
-- granted and left its hold, 2 when it did and the grant that followed
-- stopped at its bound with queue entries it did not judge: the client
-- runs shared_pass.lua; 3 when it left the queue's head and the grant
-- that followed stopped so.
local hash, leases, queue, fence, ids, sizeKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local owner, mode, waiter, record, size = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local publish = ARGV[6]

local r = resource(hash, leases, queue, fence, ids, sizeKey, size, publish)
-- Every grant stops at the first waiter that does not fit, the queue's
-- head: those behind it wait for it. A head that leaves may let them in,
-- so its leave grants what then fits, as a release does.
if redis.call('lindex', queue, 0) == record then
  redis.call('lpop', queue)
  return grantQueue(r, nowMs(r)) and 3 or 0
end
if redis.call('lrem', queue, 1, record) == 1 then
  return 0
end
local now = nowMs(r)
local field = holdField(mode, owner)
local used, held = purge(r, now, field)
-- The hold names the waiters granted a count of it that they have not
-- claimed; a count granted to another call of the same owner, or one this
-- waiter claimed, is not this leave's to give back.
if not held or not named(held.w, waiter) then
  return 0
end
held.w = unname(held.w, waiter)
local _, left = leaveHold(r, field, held, used, now)
return left and 2 or 1
