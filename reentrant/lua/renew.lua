-- Library (see script.go): the renewal of a plain lock's hold.

-- renewLock extends the lease of the lock whose hash and fence are given,
-- but only while owner still holds it under token: a renewal can never
-- resurrect a released or expired lock, nor extend a later hold of the
-- same owner. leaseMs is the lease in ms, a number. It returns 1 when the
-- lock is held with at least leaseMs left, 0 when owner does not hold it
-- under token.
local function renewLock(hash, fence, owner, token, leaseMs)
  if redis.call('hexists', hash, owner) == 0 or redis.call('get', fence) ~= token then
    return 0
  end
  -- Never shorten: a fixed lease of a nested hold may reach further.
  if redis.call('pttl', hash) < leaseMs then
    redis.call('pexpire', hash, leaseMs)
    keepFence(fence, leaseMs)
  end
  return 1
end
