-- Delete a lock whoever holds it, and hand it to the oldest live waiter
-- (see passOn).
-- KEYS[1] hash: the lock hash
-- KEYS[2] fence: the fencing-token counter
-- KEYS[3] queue: the waiters
-- KEYS[4] granted: the last grant to a shared owner's waiter
-- ARGV[1] publish: 'publish', 'spublish' or 'publish-alive' (see grant)
-- Returns {token, left}: the token of the hold it deleted, or 0 when the
-- lock was free; and 1 when it granted nobody but left entries in the
-- queue (see grant), so that the client runs pass.lua, else 0.
local hash, fence, queue, granted = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local publish = ARGV[1]

if redis.call('exists', hash) == 0 then
  return {0, 0}
end
local deleted = redis.call('get', fence)
local left = passOn(hash, fence, queue, granted, publish, deleted)
return {tonumber(deleted or 0), left and 1 or 0}
