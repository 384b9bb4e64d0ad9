-- Set a semaphore's size, and grant what fits of the queue under it: a
-- larger size admits waiters at once; a smaller one revokes no hold, and
-- admits nobody until the holds use less than it.
-- KEYS[1] hash: the holds (see shared.lua)
-- KEYS[2] leases: the holds' lease deadlines
-- KEYS[3] queue: the waiters
-- KEYS[4] fence: the fencing-token counter
-- KEYS[5] ids: the hold-ID counter (see newHoldID)
-- KEYS[6] sizeKey: the semaphore's size
-- ARGV[1] size: the new size
-- ARGV[2] publish: 'publish', 'spublish' or 'publish-alive' (see deliver)
-- Returns 1 when the grant stopped at its bound with queue entries it did
-- not judge (the client runs shared_pass.lua), else 0.
local hash, leases, queue, fence, ids, sizeKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local size, publish = ARGV[1], ARGV[2]

local r = resource(hash, leases, queue, fence, ids, sizeKey, size, publish)
r.size, r.storeSize = tonumber(size), true
local now = nowMs(r)
local plan = planGrants(r, purge(r, now), r.size, '')
finish(r, plan, now)
return plan.left and 1 or 0
