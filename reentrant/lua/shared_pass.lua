-- Go on with a grant of a shared resource that stopped at its bound
-- (see planGrants): grant what fits of the queue's head. A resent or
-- repeated pass grants nothing twice: what it granted left the queue.
-- KEYS[1] hash: the holds (see shared.lua)
-- KEYS[2] leases: the holds' lease deadlines
-- KEYS[3] queue: the waiters
-- KEYS[4] fence: the fencing-token counter
-- KEYS[5] ids: the hold-ID counter (see newHoldID)
-- KEYS[6] sizeKey: the semaphore's size; absent for a read-write lock
-- ARGV[1] size: the size to use, and store, when none is stored
-- ARGV[2] publish: 'publish', 'spublish' or 'publish-alive' (see deliver)
-- Returns 1 when the grant stopped at its bound again, else 0.
local hash, leases, queue, fence, ids, sizeKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local size, publish = ARGV[1], ARGV[2]

local r = resource(hash, leases, queue, fence, ids, sizeKey, size, publish)
return grantQueue(r, nowMs(r)) and 1 or 0
