-- The lease rule of the Redisson format's scripts: a lock's expiry only
-- moves later. Redisson's own scripts PEXPIRE to the lease they are given,
-- which may shorten a lease another handle of the same holder was granted;
-- a client's local validity (the latest confirmed lease) would then
-- outlast the lock in Redis. A Java client accepts a longer TTL: it only
-- reads one as how long to wait, and an unlock still wakes it.

-- extendLease sets lock's expiry to leaseMs from now unless it already
-- lasts longer; a lock with no expiry (PTTL -1) gets one, as in Redisson.
local function extendLease(lock, leaseMs)
  if redis.call('pttl', lock) < tonumber(leaseMs) then
    redis.call('pexpire', lock, leaseMs)
  end
end
