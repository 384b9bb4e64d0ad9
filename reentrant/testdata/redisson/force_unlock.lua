-- Redisson 4.7.0, redisson/src/main/java/org/redisson/RedissonLock.java,
-- forceUnlockAsync (syncedEvalWithRetry: may be resent).
-- KEYS[1] getRawName()
-- KEYS[2] getChannelName()
-- ARGV[1] LockPubSub.UNLOCK_MESSAGE (0)
-- ARGV[2] getSubscribeService().getPublishCommand()
-- Returns 1 when the lock existed, else 0.
if (redis.call('del', KEYS[1]) == 1) then
  redis.call(ARGV[2], KEYS[2], ARGV[1]);
  return 1
else
  return 0
end
