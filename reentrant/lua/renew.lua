-- Extend the lease of a lock, but only while owner still holds it under
-- token: a renewal can never resurrect a released or expired lock, nor
-- extend a later hold of the same owner.
-- KEYS[1] hash: the lock hash
-- KEYS[2] fence: the fencing-token counter
-- ARGV[1] owner: the owner renewing
-- ARGV[2] token: the token of its hold
-- ARGV[3] leaseMs: the lease in ms
-- Returns 1 when the lock is held with at least leaseMs left, 0 when owner
-- does not hold it under token.
local hash, fence = KEYS[1], KEYS[2]
local owner, token, leaseMs = ARGV[1], ARGV[2], ARGV[3]

if redis.call('hexists', hash, owner) == 0 or redis.call('get', fence) ~= token then
  return 0
end
-- Never shorten: a fixed lease of a nested hold may reach further.
if redis.call('pttl', hash) < tonumber(leaseMs) then
  redis.call('pexpire', hash, leaseMs)
end
return 1
