-- Extend the lease of a lock, but only while ARGV[1] still holds it: a
-- renewal can never resurrect a released or expired lock.
-- KEYS[1] lock hash; ARGV[1] owner, ARGV[2] lease in ms
-- Returns 1 when renewed, 0 when ARGV[1] does not hold the lock.
if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 1
end
return 0
