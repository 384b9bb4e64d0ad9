-- Take, re-enter or queue for a reentrant lock. With a waiter, the call is
-- also its look: it finds the grant the waiter was handed, and keeps its
-- liveness key.
-- Each key and argument costs the server time of every call, the free
-- path's too: a call passes only those it uses.
-- KEYS[1] hash: the lock hash (field = owner, value = hold count)
-- KEYS[2] fence: the fencing-token counter
-- KEYS[3] queue: the waiters, oldest first, one record each
-- KEYS[4] granted: the last grant to a waiter, "<id> <token>", until the
--         waiter claims it (see grant)
-- KEYS[5] req: the request key, which remembers this request's result so
--         that a retried call replays it; absent when newOwner
-- KEYS[#KEYS] wake: the wake records (see enqueue), after req if any;
--         only for a waiter that may have one (Waiter.Wakes): its look
--         takes its record out, and one that does not queue leaves it
--         again where it does not end holding the lock
-- The hold asked for:
-- ARGV[1] owner: the owner to take or re-enter the lock for
-- ARGV[2] token: the token of the hold to re-enter, or '0' to take or
--         re-enter any
-- ARGV[3] leaseMs: the lease in ms
-- ARGV[4] newOwner: '1' when the owner was made for this one call (no
--         request key then: a hold it has can only be this call's own)
-- ARGV[5] requestMs: how long the request key lasts, in ms
-- The waiter, absent when the call does not queue (then read as ''):
-- ARGV[6] waiter: its ID
-- ARGV[7] record: its queue record (see record.go); a look that does not
--         queue (ARGV[10]) leaves it in the wake records instead, where it
--         does not hold the lock after the call: it finds and claims the
--         waiter's grant as any look does, and takes a free lock only with
--         nobody queued before it
-- ARGV[8] aliveKey: its client's liveness key, '' where there is none
-- ARGV[9] aliveMs: how long its look keeps the liveness key, in ms
-- ARGV[10] unqueued: '1' for a look that does not queue (Waiter.Unqueued),
--         present only with the wake key
-- The namespace, last (ARGV[10] or ARGV[11], or ARGV[6] without a waiter):
-- publish: 'publish', 'spublish' or 'publish-alive' (see grant)
-- Returns {1, holdCount, token} when owner holds the lock after the call,
--           with a fourth element when the hold was there before and this
--           call changed nothing: 2 for a waiter that claimed the grant it
--           was handed, 1 otherwise (a replay, or a new owner's hold found),
--         {0, pttl} when another owner holds it (the waiter is queued, once),
--         {2} when the lock is free but this call dropped as many dead
--           queue entries as one script may and more remain (see grant):
--           nothing was taken, the waiter is queued, and the call should be
--           repeated at once,
--         {3} when the lock was free and this call granted its queue's
--           head, a waiter of this given owner's: nothing was taken, the
--           waiter is queued, and the call should be repeated at once (it
--           then re-enters that hold),
--         {-1} when token names a hold that no longer exists.
local hash, fence, queue, granted, req = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local owner, token, leaseMs, newOwner, requestMs = ARGV[1], ARGV[2], ARGV[3], ARGV[4] == '1', ARGV[5]
local waiter, record, aliveKey, aliveMs = '', '', '', ''
if #ARGV > 6 then
  waiter, record, aliveKey, aliveMs = ARGV[6], ARGV[7], ARGV[8], ARGV[9]
end
local publish = ARGV[#ARGV]
local wake = #KEYS > (newOwner and 4 or 5) and KEYS[#KEYS]
requireMaster()
if wake then
  -- Left again by enqueue, if the look does not queue, unless it ends
  -- holding the lock.
  redis.call('zrem', wake, record)
end

-- The free path: nobody holds the lock and nobody waits, which one EXISTS
-- tells. It ends here, before the grant library (acquire_queue.lua) is
-- made. A re-entry (token) needs a hold, so it does not look.
if token == '0' and redis.call('exists', hash, queue) == 0 then
  return takeFree(hash, fence, owner, leaseMs, newOwner, req, requestMs)
end

-- PTTL: nobody holds a lock without one, this owner included.
local pttl = redis.call('pttl', hash)
local count = pttl ~= -2 and redis.call('hget', hash, owner)
if count then
  local held = redis.call('get', fence)
  -- A new owner can only hold the lock through this same call: a resent
  -- command, a re-check after a grant, or a grant it was handed. A given
  -- owner's waiter knows its grant by the granted key, which names the
  -- waiter until it claims the grant here. Either reports that hold and
  -- counts nothing; a waiter's look confirms the grant, whose lease may
  -- hold only until confirmed (see grant).
  local claims = waiter ~= '' and redis.call('get', granted) == waiter .. ' ' .. (held or '')
  if newOwner or claims then
    if claims then
      -- Claimed: the key names the waiter no more, so neither its leave nor
      -- the hand-back of its grant message gives a count back; a resend of
      -- this look replays it, and so does an undo.
      redis.call('del', granted)
      if not newOwner then
        redis.call('set', req, count .. ':' .. held, 'px', requestMs)
      end
    end
    if waiter ~= '' and pttl < tonumber(leaseMs) then
      redis.call('pexpire', hash, leaseMs)
      keepFence(fence, leaseMs)
    end
    return {1, tonumber(count), tonumber(held or 0), claims and 2 or 1}
  end
  local done = redis.call('get', req)
  if done then
    local c, t = string.match(done, '^(%d+):(%d+)$')
    return {1, tonumber(c), tonumber(t), 1}
  end
  -- The lock is exclusive, so the counter's value is the current hold's
  -- token. A re-entry into a hold that has since ended (and been taken
  -- again by the same owner elsewhere) must not join the new hold.
  if token ~= '0' and held ~= token then
    return {-1}
  end
  -- Re-entry bypasses the queue; a waiter of this owner leaves it.
  if waiter ~= '' then
    redis.call('lrem', queue, 1, record)
  end
  count = redis.call('hincrby', hash, owner, 1)
  -- Re-entry never shortens the lease an outer hold already has.
  if pttl < tonumber(leaseMs) then
    redis.call('pexpire', hash, leaseMs)
    keepFence(fence, leaseMs)
  end
  redis.call('set', req, string.format('%d:%s', count, held), 'px', requestMs)
  return {1, count, tonumber(held)}
end
if token ~= '0' then
  return {-1}
end
