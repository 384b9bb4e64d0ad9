-- Go on with a grant that a script had no tries left for (see grant): hand
-- the free lock to the oldest live waiter, past up to grantTries more dead
-- entries. A lock that is held (granted meanwhile, by this pass run before
-- or by a waiter's look, or taken with the queue empty) is left alone, so
-- a resent or repeated pass grants nothing twice. The lock is free, so
-- there is nothing to delete when nobody is granted: grant, not passOn.
-- KEYS[1] hash: the lock hash
-- KEYS[2] fence: the fencing-token counter
-- KEYS[3] queue: the waiters
-- KEYS[4] granted: the last grant to a given owner's waiter
-- ARGV[1] publish: 'publish', 'spublish' or 'publish-alive' (see grant)
-- Returns 1 when the lock is still free with entries left in the queue,
-- else 0.
local hash, fence, queue, granted = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local publish = ARGV[1]

if redis.call('exists', hash) == 1 then
  return 0
end
local _, _, left = grant(hash, fence, queue, granted, publish, '', nil)
return left and 1 or 0
