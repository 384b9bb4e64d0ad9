-- Delete a lock whoever holds it, and wake its waiters.
-- KEYS[1] lock hash, KEYS[2] release channel, KEYS[3] fencing counter
-- ARGV[1] 'publish' or 'spublish', ARGV[2] message
-- Returns the token of the hold it deleted, or 0 when the lock was free.
if redis.call('exists', KEYS[1]) == 0 then
  return 0
end
redis.call(ARGV[1], KEYS[2], ARGV[2])
redis.call('del', KEYS[1])
return tonumber(redis.call('get', KEYS[3]) or 0)
