-- Take or re-enter a lock in Redisson's RLock format (see redisson.go):
-- the lock is a hash named as the lock, one field per holder
-- "<clientID>:<owner>" whose value is the hold count, and the lease is the
-- hash's PEXPIRE. The state it leaves is the one Redisson's own acquire
-- leaves, so Java, Node and Go holders exclude each other, but for the
-- lease of a re-entry: it never shortens the lock's (redisson_lease.lua).
-- KEYS[1] lock: the lock's hash
-- KEYS[2] latch (optional): the request's latch, for a call that a resend
--         or an undo may replay; it records the outcome, and a replay
--         returns that outcome instead of counting again
-- ARGV[1] leaseMs: the lease in ms
-- ARGV[2] field: the holder's field
-- ARGV[3] mode: '1' (fresh) when the owner held nothing before the call, so
--         a field found can only be an earlier run of this same call (a
--         resend): it is reported, not counted again; '2' (reenter) only
--         counts a re-entry of a field that holds the lock, and changes
--         nothing when it does not; '0' does what Redisson's acquire does
-- ARGV[4] latchMs: how long the latch lasts, in ms (with KEYS[2])
-- Returns nil when the field holds the lock after the call, -3 when a
-- reenter found the field not holding it, or else the lock's PTTL in ms
-- (-1 when it has no expiry), as Redisson's acquire does. A replay of a
-- refused call returns the PTTL as it is now, at least 0.
local lock, latch = KEYS[1], KEYS[2]
local leaseMs, field, mode, latchMs = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
requireMaster()

local function acquire()
  local mine = redis.call('hexists', lock, field) == 1
  if mine and mode == '1' then
    return nil
  end
  if not mine and mode == '2' then
    return -3
  end
  if not mine and redis.call('exists', lock) == 1 then
    return redis.call('pttl', lock)
  end
  redis.call('hincrby', lock, field, 1)
  extendLease(lock, leaseMs)
  return nil
end

if not latch then
  return acquire()
end
local done = redis.call('get', latch)
if done == 'taken' then
  return nil
elseif done == 'gone' then
  return -3
elseif done then
  return math.max(redis.call('pttl', lock), 0)
end
local reply = acquire()
local outcome = 'refused'
if reply == nil then
  outcome = 'taken'
elseif reply == -3 then
  outcome = 'gone'
end
redis.call('set', latch, outcome, 'px', latchMs)
return reply
