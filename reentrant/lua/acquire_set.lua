-- Take the members of a lock set that one script may touch (one slot on a
-- cluster), in the order given (the set's canonical order), as far as it
-- can: each lock nobody holds and nobody waits for is taken as acquire.lua
-- takes it (takeFree), and the script stops at the first other one,
-- taking nothing past it. With a waiter, it queues the waiter there, as
-- acquire.lua queues one (enqueue), unless the owner holds that member
-- (a re-entry, which does not queue). The caller waits for that member as
-- a single lock's waiter, then runs this script for the members after it:
-- a set never takes a member past one it waits for, so sets and single
-- locks taking members in one order cannot wait for each other in a
-- circle.
-- KEYS[3i-2] hash: member i's lock hash
-- KEYS[3i-1] fence: member i's fencing-token counter
-- KEYS[3i]   queue: member i's waiters
-- KEYS[#KEYS] req: the request key, which remembers this request's result
--             so that a retried call replays it; absent when newOwner
-- ARGV[1] owner: the owner to take the members for
-- ARGV[2] leaseMs: the lease in ms
-- ARGV[3] newOwner: '1' when the owner was made for this one call (no
--         request key then: a hold it has can only be this call's own)
-- ARGV[4] requestMs: how long the request key lasts, in ms
-- The waiter, absent when the call does not queue; only where one
-- waiter's record serves every lock (Keys.SharesWaiters: no liveness key):
-- ARGV[5] waiter: its ID
-- ARGV[6] record: its queue record (see record.go)
-- Returns {queued, token...}: queued is the PTTL of the member the waiter
-- was queued at (0 when that member is free behind its queue, or has no
-- expiry: the waiter should look at once), or -3 when
-- it was queued nowhere; then the tokens of the members taken, in order,
-- from the first: as many as were taken, all of them or fewer. A member
-- the owner made for the call holds already (a resent call) counts as
-- taken, with its token. Fails with TOKENRANGE (see tokenOverflow) when a
-- member to take has no exact next token, holding none this run took.
local owner, leaseMs, newOwner, requestMs = ARGV[1], ARGV[2], ARGV[3] == '1', ARGV[4]
local waiter, record = ARGV[5] or '', ARGV[6] or ''
local members = math.floor(#KEYS / 3)
local req = not newOwner and KEYS[#KEYS]
requireMaster()

if req then
  local seen = replayed(req)
  if seen then
    return seen
  end
end
local reply, taken = {-3}, {}
for i = 1, members do
  local hash, fence, queue = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i]
  if redis.call('exists', hash, queue) == 0 then
    local ok, took = pcall(takeFree, hash, fence, owner, leaseMs, true, nil, nil)
    if not ok then
      -- A member with no exact next token (tokenOverflow) fails the set,
      -- which gives back first what this run took: those members were
      -- free with no queue, so their hashes are this hold alone, and
      -- their counters only rose. The failed call holds none of them.
      if #taken > 0 then
        redis.call('del', unpack(taken))
      end
      -- pcall hands the error back as its message: raised again as a
      -- reply, it keeps its code.
      error({err = took})
    end
    taken[#taken + 1] = hash
    reply[i + 1] = took[3]
  elseif newOwner and redis.call('hexists', hash, owner) == 1 then
    reply[i + 1] = tonumber(redis.call('get', fence))
  else
    if waiter ~= '' and redis.call('hexists', hash, owner) == 0 then
      -- Free behind its queue (PTTL -2), or held with no expiry (-1):
      -- the waiter looks at once, and its look grants the queue's head,
      -- or reads the PTTL.
      reply[1] = math.max(redis.call('pttl', hash), 0)
      enqueue(queue, record, '', '', leaseMs)
    end
    break
  end
end
if req then
  remember(req, reply, requestMs)
end
return reply
