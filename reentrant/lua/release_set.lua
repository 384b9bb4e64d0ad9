-- Leave one hold of each member of a lock set that one script may touch
-- (one slot on a cluster), each as release.lua leaves one (releaseHold):
-- the last hold of a member hands that member to its own oldest live
-- waiter, in this same script (passOn, one grant message per member
-- granted), or frees it.
-- KEYS[4i-3] hash: member i's lock hash
-- KEYS[4i-2] fence: member i's fencing-token counter
-- KEYS[4i-1] queue: member i's waiters
-- KEYS[4i]   granted: member i's last grant to a waiter, until it claims it
-- KEYS[#KEYS] req: the request key, which remembers this request's result
--             so that a retried call replays it
-- ARGV[2i-1] owner: the owner leaving a hold of member i
-- ARGV[2i]   token: the token of that hold
-- ARGV[#ARGV-1] requestMs: how long the request key lasts, in ms
-- ARGV[#ARGV] publish: 'publish', 'spublish' or 'publish-alive' (see grant)
-- Returns, for each member in turn, what release.lua returns for it: the
-- owner's remaining hold count (0 = released, and granted to the next
-- waiter if any), -1 when the owner does not hold it under the token, or
-- -2 when it released it and granted nobody but left entries in its queue
-- (see grant): the client runs pass.lua for that member.
local req = KEYS[#KEYS]
local requestMs, publish = ARGV[#ARGV - 1], ARGV[#ARGV]

local seen = replayed(req)
if seen then
  return seen
end
local left = {}
for i = 1, (#ARGV - 2) / 2 do
  local hash, fence, queue, granted = KEYS[4 * i - 3], KEYS[4 * i - 2], KEYS[4 * i - 1], KEYS[4 * i]
  local owner, token = ARGV[2 * i - 1], ARGV[2 * i]
  local held = redis.call('get', fence)
  left[i] = releaseHold(hash, queue, granted, owner, token, held)
  if not left[i] then
    left[i] = passOn(hash, fence, queue, granted, publish, held) and -2 or 0
  end
end
return remember(req, left, requestMs)
