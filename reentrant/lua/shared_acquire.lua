-- Take, re-enter or queue for a hold in a mode of a shared resource. With a
-- waiter, the call is also its look: it finds the grant the waiter was
-- handed, and keeps its liveness key.
-- KEYS[1] hash: the holds (see shared.lua)
-- KEYS[2] leases: the holds' lease deadlines
-- KEYS[3] queue: the waiters, oldest first, one record each
-- KEYS[4] fence: the fencing-token counter
-- KEYS[5] ids: the hold-ID counter (see newHoldID)
-- KEYS[6] req: the request key, which remembers this request's result so
--         that a retried call replays it
-- KEYS[7] sizeKey: the semaphore's size; absent for a read-write lock
-- The hold asked for:
-- ARGV[1] owner: the owner to take or re-enter a hold for
-- ARGV[2] id: the hold ID of the hold to re-enter, or '0' to take or
--         re-enter any
-- ARGV[3] mode: 'r', 'w' or 'p' (see Mode)
-- ARGV[4] weight: how much of the size the hold takes
-- ARGV[5] size: the size to use, and store, when none is stored
-- ARGV[6] leaseMs: the lease in ms
-- ARGV[7] newOwner: '1' when the owner was made for this one call (no
--         request key then: a hold it has can only be this call's own)
-- ARGV[8] requestMs: how long the request key lasts, in ms
-- The waiter, all '' when the call does not queue:
-- ARGV[9] waiter: its ID
-- ARGV[10] record: its queue record (see record.go)
-- ARGV[11] aliveKey: its client's liveness key, '' where there is none
-- ARGV[12] aliveMs: how long its look keeps the liveness key, in ms
-- The namespace:
-- ARGV[13] publish: 'publish', 'spublish' or 'publish-alive' (see deliver)
-- Returns {1, holdCount, token, reported, id} when owner holds in mode
--           after the call, under hold ID id: reported is 1 when the hold
--           was there before and this call changed nothing but its lease (a
--           replay, or a waiter finding its grant), else 0,
--         {0, ms} when the hold does not fit now, or others queue before
--           it (the waiter is queued, once): ms is how long until the first
--           hold's lease deadline (-1 for none), when a waiter should look,
--         {2} when this call's grant stopped at its bound with queue
--           entries it did not judge: nothing was taken, the waiter is
--           queued, and the call should be repeated at once,
--         {-1} when id names a hold that no longer exists,
--         {-2, size} when weight is above the size (0: a semaphore with no
--           size stored, and none given): nothing was written,
--         {-4} when owner already holds permits: they are not re-entered.
local hash, leases, queue, fence, ids, req, sizeKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local owner, id, mode, weight, size = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5]
local leaseMs, newOwner, requestMs = tonumber(ARGV[6]), ARGV[7] == '1', ARGV[8]
local waiter, record, aliveKey, aliveMs = ARGV[9], ARGV[10], ARGV[11], ARGV[12]
local publish = ARGV[13]
requireMaster()

local r = resource(hash, leases, queue, fence, ids, sizeKey, size, publish)
if not r.size or weight > r.size then
  return {-2, r.size or 0}
end
local now = nowMs(r)
local field = holdField(mode, owner)
local used, held = purge(r, now, field)
if held then
  -- A new owner can only hold through this same call: a resent command, a
  -- re-check after a grant, or a grant it was handed; a given owner's
  -- waiter knows its grant by the waiter the hold names. Either reports
  -- the hold and counts nothing; a waiter's look confirms the grant, whose
  -- lease may hold only until confirmed.
  local claims = named(held.w, waiter)
  if newOwner or claims then
    if waiter ~= '' then
      extend(r, field, now, leaseMs)
    end
    if claims then
      -- Claimed: the hold names the waiter no more, so neither its leave
      -- nor the hand-back of its grant message gives its count back; a
      -- resend of this look replays it, and so does an undo.
      redis.call('hset', hash, field, formatHold(held.c, held.n, held.t, held.hid, unname(held.w, waiter)))
      if not newOwner then
        redis.call('set', req, held.c .. ':' .. held.t .. ':' .. held.hid, 'px', requestMs)
      end
    end
    return {1, held.c, tonumber(held.t), 1, tonumber(held.hid)}
  end
  local done = redis.call('get', req)
  if done then
    local c, t, hid = string.match(done, '^(%d+):(%d+):(%d+)$')
    return {1, tonumber(c), tonumber(t), 1, tonumber(hid)}
  end
  -- The hold ID tells holds apart: a re-entry meant for a hold that ended
  -- must not count on the same owner's next hold.
  if id ~= '0' and held.hid ~= id then
    return {-1}
  end
  if mode == 'p' then
    return {-4}
  end
  -- Re-entry bypasses the queue; a waiter of this owner leaves it.
  if waiter ~= '' then
    redis.call('lrem', queue, 1, record)
  end
  held.c = held.c + 1
  redis.call('hset', hash, field, formatHold(held.c, held.n, held.t, held.hid, held.w))
  extend(r, field, now, leaseMs)
  redis.call('set', req, held.c .. ':' .. held.t .. ':' .. held.hid, 'px', requestMs)
  return {1, held.c, tonumber(held.t), 0, tonumber(held.hid)}
end
if id ~= '0' then
  return {-1}
end

-- A read inside the owner's own write is granted at once, past the queue
-- and the size, with the write's token: after the write's release the read
-- hold remains (a downgrade), and no writer can come between.
local write = mode == 'r' and not newOwner and parseHold(redis.call('hget', hash, holdField('w', owner)))
if write then
  if waiter ~= '' then
    redis.call('lrem', queue, 1, record)
  end
  local hid = newHoldID(r, leaseMs)
  redis.call('hset', hash, field, formatHold(1, 1, write.t, hid, waiter))
  redis.call('zadd', leases, now + leaseMs, field)
  settle(r, used + 1)
  redis.call('set', req, '1:' .. write.t .. ':' .. formatToken(hid), 'px', requestMs)
  return {1, 1, tonumber(write.t), 0, hid}
end

-- Nobody is granted past a queue: its heads that fit go first, which may
-- include the caller. A hold its owner got meanwhile, through another of
-- its waiters, this call re-enters, as above.
local plan = planGrants(r, used, r.size, waiter)
if not plan.mine then
  local other = plan.holds[field]
  -- A read inside the write the plan granted its owner, as above.
  local inside = mode == 'r' and not newOwner and plan.holds[holdField('w', owner)]
  if other and mode ~= 'p' or inside or not other and not plan.rest and plan.used + weight <= r.size then
    planTake(r, plan, {f = field, m = mode, n = weight, o = owner, id = waiter, l = leaseMs})
    if (other or inside) and waiter ~= '' then
      redis.call('lrem', queue, 1, record)
    end
  end
end
local mine = plan.mine
if mine and not newOwner then
  redis.call('set', req, mine.c .. ':' .. formatToken(mine.t) .. ':' .. formatToken(mine.hid), 'px', requestMs)
end
finish(r, plan, now)
if mine then
  return {1, mine.c, tonumber(mine.t), 0, tonumber(mine.hid)}
end
enqueue(queue, record, aliveKey, aliveMs, leaseMs)
if waiter ~= '' then
  keepSize(r, now, leaseMs)
end
if plan.left then
  return {2}
end
return {0, earliestMs(r, now)}
