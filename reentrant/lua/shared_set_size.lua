-- Set a semaphore's size, and grant what fits of the queue under it: a
-- larger size admits waiters at once; a smaller one revokes no hold, and
-- admits nobody until the holds use less than it. The size is kept for two
-- leases of leaseMs from now at least, and never for less than before: the
-- holds and waiters admitted under the old size keep it (see keepSize).
-- KEYS[1] hash: the holds (see shared.lua)
-- KEYS[2] leases: the holds' lease deadlines
-- KEYS[3] queue: the waiters
-- KEYS[4] fence: the fencing-token counter
-- KEYS[5] ids: the hold-ID counter (see newHoldID)
-- KEYS[6] sizeKey: the semaphore's size
-- ARGV[1] size: the new size
-- ARGV[2] leaseMs: how long the size is kept, in leases of this many ms
-- ARGV[3] publish: 'publish', 'spublish' or 'publish-alive' (see deliver)
-- Returns 1 when the grant stopped at its bound with queue entries it did
-- not judge (the client runs shared_pass.lua), else 0.
local hash, leases, queue, fence, ids, sizeKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local size, leaseMs, publish = ARGV[1], tonumber(ARGV[2]), ARGV[3]

local r = resource(hash, leases, queue, fence, ids, sizeKey, size, publish)
r.size = tonumber(size)
local now = nowMs(r)
-- PTTL is -2 for no size, and -1 for a size stored with no expiry (by a
-- baton before sizes expired), which this gives one. It counts from the
-- script's start, at or before now: now + PTTL is not before the expiry.
local kept = redis.call('pttl', sizeKey)
redis.call('set', sizeKey, size, 'pxat', now + math.max(kept, 2 * leaseMs))
r.storeSize, r.keptMs = false, leaseMs
local plan = planGrants(r, purge(r, now), r.size, '')
finish(r, plan, now)
return plan.left and 1 or 0
