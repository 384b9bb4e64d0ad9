-- The rest of acquire.lua, run after the grant library: the lock is held
-- by another owner, or free with a queue (see acquire.lua, whose locals
-- this part reads).

local reply = {0, pttl}
if pttl == -2 then
  -- Free. Nobody barges past a waiting queue: its head gets the lock,
  -- which may be the caller.
  local id, given, left = grant(hash, fence, queue, granted, publish, waiter, nil)
  if id == waiter and waiter ~= '' then
    return {1, 1, given}
  end
  if not id and not left then
    return takeFree(hash, fence, owner, leaseMs, newOwner, req, requestMs)
  end
  -- Another waiter has it, or the queue's live waiters (this one, if it
  -- is queued further back) are still behind entries this script had no
  -- tries left for. Taking the lock then would pass them by, and leave a
  -- queued caller's record to be granted later to nobody: the caller
  -- waits as when the lock is held, and repeats the call at once. Where
  -- the waiter granted is one of its own given owner's, the caller is
  -- told to repeat the call at once ({3}): the repeat re-enters that hold
  -- (this call queues after the grant, so the grant's wake-up of the
  -- owner's waiters missed it).
  if not id then
    reply = {2}
  elseif not newOwner and redis.call('hexists', hash, owner) == 1 then
    reply = {3}
  else
    reply = {0, redis.call('pttl', hash)}
  end
end
enqueue(queue, record, aliveKey, aliveMs, leaseMs, #ARGV > 10 and ARGV[10] == '1' and wake)
return reply
