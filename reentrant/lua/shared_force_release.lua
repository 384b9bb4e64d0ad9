-- End every hold of a multi-holder resource, whoever holds it, and grant
-- what fits of the queue (see planGrants).
-- KEYS[1] hash: the holds (see shared.lua)
-- KEYS[2] leases: the holds' lease deadlines
-- KEYS[3] queue: the waiters
-- KEYS[4] fence: the fencing-token counter
-- KEYS[5] req: the request key, which remembers this request's result so
--         that a resent call replays it rather than ending the holds its
--         first run granted (see replay.lua)
-- KEYS[6] sizeKey: the semaphore's size; absent for a read-write lock
-- ARGV[1] size: the size to use, and store, when none is stored
-- ARGV[2] publish: 'publish', 'spublish' or 'publish-alive' (see deliver)
-- ARGV[3] requestMs: how long the request key lasts, in ms
-- Returns {holds, left}: how many holds it ended (expired ones included),
-- and 1 when the grant stopped at its bound with queue entries it did not
-- judge, so that the client runs shared_pass.lua, else 0.
local hash, leases, queue, fence, req, sizeKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local size, publish, requestMs = ARGV[1], ARGV[2], ARGV[3]

local seen = replayed(req)
if seen then
  return seen
end
local r = resource(hash, leases, queue, fence, sizeKey, size, publish)
local now = nowMs(r)
local holds = redis.call('zcard', leases)
r.cleared = true
local plan = planGrants(r, 0, r.size, '')
redis.call('del', hash, leases)
settle(r, plan.used, commitGrants(r, plan, now))
return remember(req, {holds, plan.left and 1 or 0}, requestMs)
