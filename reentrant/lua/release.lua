-- Leave one hold of a reentrant lock; the last one hands the lock to the
-- oldest live waiter, in this same script (see grant).
-- KEYS[1] lock hash, KEYS[2] fencing counter, KEYS[3] request key,
-- KEYS[4] queue, KEYS[5] granted
-- ARGV[1] owner, ARGV[2] the hold's token, ARGV[3] request-key TTL in ms,
-- ARGV[4] 'publish', 'spublish' or 'publish-alive'
-- Returns the owner's remaining hold count (0 = released, and granted to
-- the next waiter if any), -1 when ARGV[1] does not hold the lock under
-- token ARGV[2], or -2 when it released the lock and granted nobody but
-- left entries in the queue (see grant): the client runs pass.lua.
local hash, fence, req = KEYS[1], KEYS[2], KEYS[3]
-- One read for the replay record and the counter.
local seen = redis.call('mget', req, fence)
if seen[1] then
  return tonumber(seen[1])
end

local count = tonumber(redis.call('hget', hash, ARGV[1]))
-- The token tells holds apart: a release meant for a hold that expired must
-- not release the same owner's next hold.
if not count or seen[2] ~= ARGV[2] then
  return -1
end

count = count - 1
if count > 0 then
  -- The lease is left as it is: the remaining holds were promised at
  -- least what the longest of them asked for, and re-entry never shortens.
  redis.call('hincrby', hash, ARGV[1], -1)
else
  -- The grant replaces this hold; with no live waiter the lock is free.
  -- No PUBLISH when nobody waits: the grant publishes only to a waiter.
  local id, _, left = grant(hash, fence, KEYS[4], KEYS[5], ARGV[4], '', seen[2])
  if not id then
    redis.call('del', hash)
    if left then
      -- Remembered as it is: a resent release asks for the pass again,
      -- which grants nothing twice (pass.lua runs only on a free lock).
      count = -2
    end
  end
end
redis.call('set', req, count, 'px', ARGV[3])
return count
