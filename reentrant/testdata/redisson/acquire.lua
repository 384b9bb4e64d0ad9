-- Redisson 4.7.0, redisson/src/main/java/org/redisson/RedissonLock.java,
-- tryLockInnerAsync (run by evalWriteSyncedNoRetryAsync: never resent).
-- KEYS[1] getRawName()
-- ARGV[1] unit.toMillis(leaseTime) (internalLockLeaseTime under the watchdog)
-- ARGV[2] getLockName(threadId) = ServiceManager id (a UUID) .. ':' .. threadId
-- Returns nil when acquired, else PTTL of KEYS[1].
if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
return redis.call('pttl', KEYS[1]);
