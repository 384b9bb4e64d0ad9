-- Extend the lease of a lock, but only while ARGV[1] still holds it under
-- token ARGV[2]: a renewal can never resurrect a released or expired lock,
-- nor extend a later hold of the same owner.
-- KEYS[1] lock hash, KEYS[2] fencing counter
-- ARGV[1] owner, ARGV[2] the hold's token, ARGV[3] lease in ms
-- Returns 1 when the lock is held with at least ARGV[3] ms left, 0 when
-- ARGV[1] does not hold it.
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 or redis.call('get', KEYS[2]) ~= ARGV[2] then
  return 0
end
-- Never shorten: a fixed lease of a nested hold may reach further.
if redis.call('pttl', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('pexpire', KEYS[1], ARGV[3])
end
return 1
