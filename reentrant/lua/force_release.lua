-- Delete a lock whoever holds it, and hand it to the oldest live waiter
-- (see passOn).
-- KEYS[1] hash: the lock hash
-- KEYS[2] fence: the fencing-token counter
-- KEYS[3] queue: the waiters
-- KEYS[4] granted: the last grant to a waiter, until it claims it
-- KEYS[5] req: the request key, which remembers this request's result so
--         that a resent call replays it rather than deleting the hold its
--         first run granted (see replay.lua)
-- KEYS[6] wake: the wake records, for a force release in quorum mode,
--         which wakes one of them where it frees the lock (see passOn);
--         absent otherwise
-- ARGV[1] publish: 'publish', 'spublish' or 'publish-alive' (see grant)
-- ARGV[2] requestMs: how long the request key lasts, in ms
-- ARGV[3] hold: the ID of the hold to delete (the counter's value while
--         it lasts), or 0 for whichever holds the lock: a force release
--         that names a hold deletes nothing once another hold has
--         replaced it, however late it runs
-- Returns {token, left}: the token of the hold it deleted, or 0 when the
-- lock was free; and 1 when it granted nobody but left entries in the
-- queue (see grant), so that the client runs pass.lua, else 0.
local hash, fence, queue, granted, req, wake = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local publish, requestMs, hold = ARGV[1], ARGV[2], tonumber(ARGV[3])

local seen = replayed(req)
if seen then
  return seen
end
if redis.call('exists', hash) == 0 then
  return remember(req, {0, 0}, requestMs)
end
local deleted = redis.call('get', fence)
if hold ~= 0 and tonumber(deleted or 0) ~= hold then
  return remember(req, {0, 0}, requestMs)
end
local left = passOn(hash, fence, queue, granted, publish, deleted, wake)
return remember(req, {tonumber(deleted or 0), left and 1 or 0}, requestMs)
