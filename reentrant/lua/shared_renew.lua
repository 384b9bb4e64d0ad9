-- Extend the lease of a hold of a multi-holder resource, but only while
-- owner still holds in mode under token and the lease has not run out by
-- the server clock: a renewal can never resurrect a hold, nor extend a
-- later hold of the same owner.
-- KEYS[1] hash: the holds (see shared.lua)
-- KEYS[2] leases: the holds' lease deadlines
-- ARGV[1] owner: the owner renewing
-- ARGV[2] token: the token of its hold
-- ARGV[3] mode: the hold's mode
-- ARGV[4] leaseMs: the lease in ms
-- Returns 1 when the hold has at least leaseMs left, 0 when owner does not
-- hold in mode under token.
local hash, leases = KEYS[1], KEYS[2]
local owner, token, mode, leaseMs = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])

local field = holdField(mode, owner)
local held = parseHold(redis.call('hget', hash, field))
if not held or held.t ~= token then
  return 0
end
local now = nowMs()
local deadline = redis.call('zscore', leases, field)
if not deadline or tonumber(deadline) <= now then
  return 0
end
-- Never shorten: a nested hold's fixed lease may reach further.
extend(hash, leases, field, now + leaseMs)
return 1
