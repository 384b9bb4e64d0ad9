-- Take the members of a lock set that one script may touch (one slot on a
-- cluster), in the order given (the set's canonical order), as far as it
-- can: each lock nobody holds and nobody waits for is taken as acquire.lua
-- takes it (takeFree), and the script stops at the first other one,
-- taking nothing past it. The caller waits for that member as a single
-- lock's waiter, then runs this script for the members after it: a set
-- never takes a member past one it waits for, so sets and single locks
-- taking members in one order cannot wait for each other in a circle.
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
-- Returns the tokens of the members taken, in order, from the first: as
-- many as were taken, all of them or fewer. A member the owner made for
-- the call holds already (a resent call) counts as taken, with its token.
local owner, leaseMs, newOwner, requestMs = ARGV[1], ARGV[2], ARGV[3] == '1', ARGV[4]
local members = math.floor(#KEYS / 3)
local req = not newOwner and KEYS[#KEYS]
requireMaster()

if req then
  local seen = replayed(req)
  if seen then
    return seen
  end
end
local taken = {}
for i = 1, members do
  local hash, fence, queue = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i]
  if redis.call('exists', hash, queue) == 0 then
    taken[i] = takeFree(hash, fence, owner, leaseMs, true, nil, nil)[3]
  elseif newOwner and redis.call('hexists', hash, owner) == 1 then
    taken[i] = tonumber(redis.call('get', fence))
  else
    break
  end
end
if req then
  remember(req, taken, requestMs)
end
return taken
