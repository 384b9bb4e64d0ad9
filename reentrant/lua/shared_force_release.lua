-- End every hold of a shared resource, whoever holds it, and grant
-- what fits of the queue (see planGrants).
-- KEYS[1] hash: the holds (see shared.lua)
-- KEYS[2] leases: the holds' lease deadlines
-- KEYS[3] queue: the waiters
-- KEYS[4] fence: the fencing-token counter
-- KEYS[5] ids: the hold-ID counter (see newHoldID)
-- KEYS[6] req: the request key, which remembers this request's result so
--         that a resent call replays it rather than ending the holds its
--         first run granted (see replay.lua)
-- KEYS[7] sizeKey: the semaphore's size; absent for a read-write lock
-- ARGV[1] size: the size to use, and store, when none is stored
-- ARGV[2] publish: 'publish', 'spublish' or 'publish-alive' (see deliver)
-- ARGV[3] requestMs: how long the request key lasts, in ms
-- Returns {holds, left, id...}: how many holds it ended (expired ones
-- included), 1 when the grant stopped at its bound with queue entries it
-- did not judge, so that the client runs shared_pass.lua, else 0, and the
-- hold ID of each hold it ended: a client ends exactly those, not a later
-- hold of the same owner taken while the reply was on its way.
local hash, leases, queue, fence, ids, req, sizeKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local size, publish, requestMs = ARGV[1], ARGV[2], ARGV[3]

local seen = replayed(req)
if seen then
  return seen
end
local r = resource(hash, leases, queue, fence, ids, sizeKey, size, publish)
local now = nowMs(r)
-- The reply, with the hold ID of each hold ended (every value but 'used').
local reply = {redis.call('zcard', leases), 0}
local all = redis.call('hgetall', hash)
for i = 2, #all, 2 do
  local held = parseHold(all[i])
  if held and held.hid then
    reply[#reply + 1] = tonumber(held.hid)
  end
end
r.cleared = true
local plan = planGrants(r, 0, r.size, '')
redis.call('del', hash, leases)
settle(r, plan.used, commitGrants(r, plan, now))
reply[2] = plan.left and 1 or 0
return remember(req, reply, requestMs)
