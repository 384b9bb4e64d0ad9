-- Delete a lock whoever holds it, and wake its waiters.
-- KEYS[1] lock hash, KEYS[2] release channel
-- ARGV[1] 'publish' or 'spublish', ARGV[2] message
-- Returns 1 when a lock was deleted, 0 when it was free.
if redis.call('exists', KEYS[1]) == 0 then
  return 0
end
redis.call(ARGV[1], KEYS[2], ARGV[2])
redis.call('del', KEYS[1])
return 1
