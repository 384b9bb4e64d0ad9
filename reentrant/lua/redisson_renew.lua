-- Extend the leases of locks in Redisson's RLock format, each only while its
-- field still holds it, as Redisson's watchdog does: a batch of locks, all
-- in one cluster slot, renewed to one lease.
-- KEYS[i] locks[i]: the i-th lock's hash
-- ARGV[1] leaseMs: the lease in ms; a longer one is kept (redisson_lease.lua)
-- ARGV[1+i] fields[i]: the field holding the i-th lock
-- Returns one number per lock: 1 renewed, 0 its field is gone (the hold
-- was lost; nothing changed).
local locks = KEYS
local leaseMs = ARGV[1]
requireMaster()
local fields = {}
for i = 1, #locks do
  fields[i] = ARGV[1 + i]
end

local renewed = {}
for i, lock in ipairs(locks) do
  if redis.call('hexists', lock, fields[i]) == 1 then
    extendLease(lock, leaseMs)
    renewed[i] = 1
  else
    renewed[i] = 0
  end
end
return renewed
