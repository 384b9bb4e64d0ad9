-- Leave one hold of a reentrant lock; the last one hands the lock to the
-- oldest live waiter, in this same script, or frees it (see passOn).
-- KEYS[1] hash: the lock hash
-- KEYS[2] fence: the fencing-token counter
-- KEYS[3] req: the request key, which remembers this request's result so
--         that a retried call replays it
-- KEYS[4] queue: the waiters
-- KEYS[5] granted: the last grant to a waiter, until it claims it
-- KEYS[6] wake: the wake records, for a release that frees the lock to
--         wake one of (see passOn); absent for a give-back, which wakes
--         none
-- ARGV[1] owner: the owner leaving a hold
-- ARGV[2] token: the token of its hold
-- ARGV[3] requestMs: how long the request key lasts, in ms
-- ARGV[4] publish: 'publish', 'spublish' or 'publish-alive' (see grant)
-- Returns the owner's remaining hold count (0 = released, and granted to
-- the next waiter if any), -1 when owner does not hold the lock under
-- token, or -2 when it released the lock and granted nobody but left
-- entries in the queue (see grant): the client runs pass.lua.
-- This file runs before the grant library, and ends every call that
-- grants nothing; release_pass.lua, after the library, hands the lock on
-- to a queue. Each remembers its reply under req, for requestMs.
local hash, fence, req, queue, granted, wake = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local owner, token, requestMs, publish = ARGV[1], ARGV[2], ARGV[3], ARGV[4]

-- One read for the replay record and the counter.
local seen = redis.call('mget', req, fence)
if seen[1] then
  return tonumber(seen[1])
end

-- The free path ends here, with no PUBLISH: the owner still holds, or
-- nobody is queued (its record is then the string '0': a Lua number
-- would be printed, which costs the server more than the SET).
local left = releaseHold(hash, queue, granted, owner, token, seen[2], wake)
if left == -1 then
  return -1
end
if left then
  redis.call('set', req, left == 0 and '0' or left, 'px', requestMs)
  return left
end
