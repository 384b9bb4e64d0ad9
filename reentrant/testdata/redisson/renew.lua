-- Redisson 4.7.0, redisson/src/main/java/org/redisson/renewal/LockTask.java,
-- buildChunk: the watchdog's batched renewal, every lockWatchdogTimeout / 3
-- (RenewalTask.schedule), one chunk of at most lockWatchdogBatchSize (100)
-- locks, grouped by cluster slot on a cluster (RenewalTask.renewSlots).
-- KEYS[i] the raw name of the i-th lock
-- ARGV[1] internalLockLeaseTime (lockWatchdogTimeout, 30000 by default)
-- ARGV[i + 1] getLockName(threadId) of the i-th lock's first thread
-- Returns a list of 1 (renewed) / 0 (field gone: renewal cancelled).
-- (Redisson 3.x renewed one lock per call, RedissonBaseLock.renewExpirationAsync:
-- the same hexists / pexpire on one key, returning 1 or 0.)
local result = {}
for i = 1, #KEYS, 1 do
  if (redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1) then
    redis.call('pexpire', KEYS[i], ARGV[1]);
    table.insert(result, 1);
  else
    table.insert(result, 0);
  end;
end;
return result;
