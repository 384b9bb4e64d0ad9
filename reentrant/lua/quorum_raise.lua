-- Raise a hold's token to a quorum's token: the second round of quorum
-- mode (see the package doc's Quorum mode). On this node, and only while
-- owner still holds the lock under the token from (the token this node's
-- acquire gave it), the fencing counter becomes to, which is then the
-- hold's ID here: every later release, renewal and re-entry names the hold
-- by to. A resend finds the counter at to already, and changes nothing.
-- A hold another call of owner has re-entered under from (count above 1)
-- is not raised: from is that call's name for the hold, by which it gives
-- its count back, and a hold's ID moves under no call that named it.
-- KEYS[1] hash: the lock hash
-- KEYS[2] fence: the fencing-token counter
-- ARGV[1] owner: the owner of the hold
-- ARGV[2] from: the hold's token on this node, from its acquire or grant
-- ARGV[3] to: the quorum's token, at least from
-- ARGV[4] leaseMs: the hold's lease in ms
-- Returns 1 when the hold's ID is to after the call, 2 when it stays from
-- (re-entered: not raised), 0 when owner does not hold the lock under from
-- (nor under to).
local hash, fence = KEYS[1], KEYS[2]
local owner, from, to, leaseMs = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
requireMaster()

if redis.call('hexists', hash, owner) == 0 then
  return 0
end
local held = redis.call('get', fence)
if held == to then
  return 1
end
if held ~= from then
  return 0
end
if tonumber(redis.call('hget', hash, owner)) > 1 then
  return 2
end
-- The counter keeps its expiry, which a renewal may have moved past to's
-- own (see Footprint), and outlives to's time by two leases too.
redis.call('set', fence, to, 'keepttl')
redis.call('pexpireat', fence, fenceUntil(tonumber(to), leaseMs), 'gt')
return 1
