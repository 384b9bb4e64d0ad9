-- Take, re-enter or queue for a reentrant lock.
-- KEYS[1] lock hash (field = owner, value = hold count), KEYS[2] fencing
-- counter, KEYS[3] request key (remembers this request's result so a
-- retried call replays it), KEYS[4] queue, KEYS[5] granted
-- ARGV[1] owner, ARGV[2] lease in ms, ARGV[3] request-key TTL in ms,
-- ARGV[4] '1' when the owner ID was made for this one call,
-- ARGV[5] the token of the hold to re-enter, or '0' to take or re-enter any,
-- ARGV[6] waiter ID, or '' to never queue, ARGV[7] the waiter's queue
-- record (see parseWaiter), ARGV[8] 'publish', 'spublish' or
-- 'publish-alive' (see grant), ARGV[9] the waiter's liveness key or '',
-- ARGV[10] its TTL in ms
-- Returns {1, holdCount, token} when ARGV[1] holds the lock after the call,
--           with a fourth element 1 when the hold was there before and this
--           call changed nothing (a replay, or a waiter finding its grant),
--         {0, pttl} when another owner holds it (the waiter is queued, once),
--         {2} when the lock is free but this call dropped as many dead
--           queue entries as one script may and more remain (see grant):
--           nothing was taken, the waiter is queued, and the call should be
--           repeated at once,
--         {-1} when ARGV[5] names a hold that no longer exists.
local hash, fence, req, queue, granted = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local owner, lease, self, record = ARGV[1], ARGV[2], ARGV[6], ARGV[7]

-- PTTL first: on the uncontended path the lock is free, and then nobody
-- holds it, this owner included.
local pttl = redis.call('pttl', hash)
local count = pttl ~= -2 and redis.call('hget', hash, owner)
if count then
  local token = redis.call('get', fence)
  -- A new owner can only hold the lock through this same call: a resent
  -- command, a re-check after a grant, or a grant it was handed. A shared
  -- owner's waiter checks that the grant was its own. Either reports that
  -- hold and counts nothing; a waiter's look confirms the grant, whose
  -- lease may hold only until confirmed (see grant).
  if ARGV[4] == '1' or self ~= '' and redis.call('get', granted) == self .. ' ' .. (token or '') then
    if self ~= '' and pttl < tonumber(lease) then
      redis.call('pexpire', hash, lease)
    end
    return {1, tonumber(count), tonumber(token or 0), 1}
  end
  local done = redis.call('get', req)
  if done then
    local c, t = string.match(done, '^(%d+):(%d+)$')
    return {1, tonumber(c), tonumber(t), 1}
  end
  -- The lock is exclusive, so the counter's value is the current hold's
  -- token. A re-entry into a hold that has since ended (and been taken
  -- again by the same owner elsewhere) must not join the new hold.
  if ARGV[5] ~= '0' and token ~= ARGV[5] then
    return {-1}
  end
  -- Re-entry bypasses the queue; a waiter of this owner leaves it.
  if self ~= '' then
    redis.call('lrem', queue, 1, record)
  end
  count = redis.call('hincrby', hash, owner, 1)
  -- Re-entry never shortens the lease an outer hold already has.
  if pttl < tonumber(lease) then
    redis.call('pexpire', hash, lease)
  end
  redis.call('set', req, string.format('%d:%s', count, token), 'px', ARGV[3])
  return {1, count, tonumber(token)}
end
if ARGV[5] ~= '0' then
  return {-1}
end

local reply = {0, pttl}
if pttl == -2 then
  -- Free. Nobody barges past a waiting queue: its head gets the lock,
  -- which may be the caller.
  local id, token, left = grant(hash, fence, queue, granted, ARGV[8], self, nil)
  if id == self and self ~= '' then
    return {1, 1, token}
  end
  if not id and not left then
    token = takeFree(hash, fence, owner, lease)
    if ARGV[4] ~= '1' then
      redis.call('set', req, '1:' .. formatToken(token), 'px', ARGV[3])
    end
    return {1, 1, token}
  end
  -- Another waiter has it, or the queue's live waiters (this one, if it
  -- is queued further back) are still behind entries this script had no
  -- tries left for. Taking the lock then would pass them by, and leave a
  -- queued caller's record to be granted later to nobody: the caller
  -- waits as when the lock is held, and repeats the call at once.
  reply = id and {0, redis.call('pttl', hash)} or {2}
end
if self ~= '' then
  if not redis.call('lpos', queue, record) then
    redis.call('rpush', queue, record)
  end
  -- Every look of a queued waiter says its client is alive.
  if ARGV[9] ~= '' then
    redis.call('set', ARGV[9], 1, 'px', ARGV[10])
  end
end
return reply
