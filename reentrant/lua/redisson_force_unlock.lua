-- Delete a lock in Redisson's RLock format whoever holds it, and publish
-- the unlock message on its channel, as Redisson's forceUnlock does.
-- KEYS[1] lock: the lock's hash
-- KEYS[2] channel: the lock's channel
-- ARGV[1] publish: 'publish' or 'spublish'
-- ARGV[2] message: the unlock message
-- Returns 1 when the lock existed and was deleted, 0 when it did not exist.
local lock, channel = KEYS[1], KEYS[2]
local publish, message = ARGV[1], ARGV[2]

if redis.call('exists', lock) == 0 then
  return 0
end
-- Publish before deleting: a missing channel permission fails the script
-- with the lock as it was.
redis.call(publish, channel, message)
redis.call('del', lock)
return 1
