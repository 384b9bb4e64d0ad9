-- Acquire of a lock in Redisson's RLock format, written for the bench from
-- that format: the lock is a hash named as the lock, with one field per
-- holder (Redisson's "<instance ID>:<thread ID>") whose value is its
-- re-entry count, and the lease is the hash's PEXPIRE. Free, or held by
-- the same holder: counted and leased; else refused.
-- KEYS[1] lock hash. ARGV[1] lease ms, ARGV[2] holder field.
-- Returns nil when granted, else the lock's PTTL.
local lock = KEYS[1]
local lease, holder = ARGV[1], ARGV[2]

if redis.call('exists', lock) == 0 or redis.call('hexists', lock, holder) == 1 then
  redis.call('hincrby', lock, holder, 1)
  redis.call('pexpire', lock, lease)
  return false
end
return redis.call('pttl', lock)
