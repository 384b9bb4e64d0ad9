-- Go on with a grant that a script had no tries left for (see grant): hand
-- the free lock to the oldest live waiter, past up to grantTries more dead
-- entries. A lock that is held (granted meanwhile, by this pass run before
-- or by a waiter's look, or taken with the queue empty) is left alone, so
-- a resent or repeated pass grants nothing twice.
-- KEYS[1] lock hash, KEYS[2] fencing counter, KEYS[3] queue, KEYS[4] granted
-- ARGV[1] 'publish', 'spublish' or 'publish-alive'
-- Returns 1 when the lock is still free with entries left in the queue,
-- else 0.
local hash = KEYS[1]
if redis.call('exists', hash) == 1 then
  return 0
end
local _, _, left = grant(hash, KEYS[2], KEYS[3], KEYS[4], ARGV[1], '', nil)
return left and 1 or 0
