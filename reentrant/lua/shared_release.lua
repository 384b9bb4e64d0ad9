-- Leave one count of a hold of a shared resource; the last one frees
-- its weight, and what fits of the queue is granted in this same script
-- (see leaveHold).
-- KEYS[1] hash: the holds (see shared.lua)
-- KEYS[2] leases: the holds' lease deadlines
-- KEYS[3] queue: the waiters
-- KEYS[4] fence: the fencing-token counter
-- KEYS[5] ids: the hold-ID counter (see newHoldID)
-- KEYS[6] req: the request key, which remembers this request's result so
--         that a retried call replays it
-- KEYS[7] sizeKey: the semaphore's size; absent for a read-write lock
-- ARGV[1] owner: the owner leaving a hold
-- ARGV[2] id: the hold ID of its hold
-- ARGV[3] mode: the hold's mode
-- ARGV[4] size: the size to use, and store, when none is stored
-- ARGV[5] requestMs: how long the request key lasts, in ms
-- ARGV[6] publish: 'publish', 'spublish' or 'publish-alive' (see deliver)
-- Returns the hold's remaining count (0 = released, and what fits granted),
-- -1 when owner does not hold in mode under id, or -2 when it released
-- the hold and its grant stopped at its bound with queue entries it did
-- not judge: the client runs shared_pass.lua.
local hash, leases, queue, fence, ids, req, sizeKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local owner, id, mode, size, requestMs = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local publish = ARGV[6]

local done = redis.call('get', req)
if done then
  return tonumber(done)
end
local r = resource(hash, leases, queue, fence, ids, sizeKey, size, publish)
local now = nowMs(r)
local field = holdField(mode, owner)
local used, held = purge(r, now, field)
-- The hold ID tells holds apart: a release meant for a hold that ended
-- must not release the same owner's next hold, which a read's token, the
-- last write's, cannot tell from it.
if not held or held.hid ~= id then
  return -1
end
local count, left = leaveHold(r, field, held, used, now)
if left then
  -- Remembered as it is: a resent release asks for the pass again, which
  -- grants nothing twice.
  count = -2
end
redis.call('set', req, count, 'px', requestMs)
return count
