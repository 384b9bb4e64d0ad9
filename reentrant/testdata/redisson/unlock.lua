-- Redisson 4.7.0, redisson/src/main/java/org/redisson/RedissonLock.java,
-- unlockInnerAsync(threadId, requestId, timeout) (evalWriteSyncedNoRetryAsync).
-- After its reply RedissonBaseLock.unlockInnerAsync(threadId, requestId)
-- sends DEL KEYS[3], without waiting for it.
-- KEYS[1] getRawName()
-- KEYS[2] getChannelName() = prefixName("redisson_lock__channel", rawName)
-- KEYS[3] getUnlockLatchName(requestId) = prefixName("redisson_unlock_latch", rawName) .. ':' .. requestId
-- ARGV[1] LockPubSub.UNLOCK_MESSAGE (0)
-- ARGV[2] internalLockLeaseTime
-- ARGV[3] getLockName(threadId)
-- ARGV[4] getSubscribeService().getPublishCommand() ('PUBLISH' or 'SPUBLISH')
-- ARGV[5] timeout = retryAttempts * (timeout + retryDelay.calcDelay(retryAttempts)), at least 1
-- Returns nil (not held), 0 (still held), 1 (released), or the latch's value.
local val = redis.call('get', KEYS[3]);
if val ~= false then
  return tonumber(val);
end;
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then
  return nil;
end;
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
if (counter > 0) then
  redis.call('pexpire', KEYS[1], ARGV[2]);
  redis.call('set', KEYS[3], 0, 'px', ARGV[5]);
  return 0;
else
  redis.call('del', KEYS[1]);
  redis.call(ARGV[4], KEYS[2], ARGV[1]);
  redis.call('set', KEYS[3], 1, 'px', ARGV[5]);
  return 1;
end;
