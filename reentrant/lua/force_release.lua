-- Delete a lock whoever holds it, and hand it to the oldest live waiter.
-- KEYS[1] lock hash, KEYS[2] fencing counter, KEYS[3] queue, KEYS[4] granted
-- ARGV[1] 'publish', 'spublish' or 'publish-alive'
-- Returns {token, left}: the token of the hold it deleted, or 0 when the
-- lock was free; and 1 when it granted nobody but left entries in the
-- queue (see grant), so that the client runs pass.lua, else 0.
local hash, fence = KEYS[1], KEYS[2]
if redis.call('exists', hash) == 0 then
  return {0, 0}
end
local deleted = redis.call('get', fence)
local id, _, left = grant(hash, fence, KEYS[3], KEYS[4], ARGV[1], '', deleted)
if not id then
  redis.call('del', hash)
end
return {tonumber(deleted or 0), left and 1 or 0}
