-- Raise a hold's token to a quorum's token: the second round of quorum
-- mode (see the package doc's Quorum mode). On this node, and only while
-- owner still holds the lock under the token from (the token this node's
-- acquire gave it), the fencing counter becomes to, which is then the
-- hold's ID here: every later release, renewal and re-entry names the hold
-- by to. A resend finds the counter at to already, and changes nothing.
-- A hold another call of owner has re-entered under from (count above 1)
-- is not raised: from is that call's name for the hold, by which it gives
-- its count back, and a hold's ID moves under no call that named it.
-- Every copy of one raise goes under one request key: the first to run
-- decides, and a copy that comes later (late on the network, after the
-- hold's release, when the count left under from is another call's)
-- replays its reply, and moves no ID.
-- KEYS[1] hash: the lock hash
-- KEYS[2] fence: the fencing-token counter
-- KEYS[3] req: the request key, which remembers the first copy's reply
-- ARGV[1] owner: the owner of the hold
-- ARGV[2] from: the hold's token on this node, from its acquire or grant
-- ARGV[3] to: the quorum's token, at least from
-- ARGV[4] leaseMs: the hold's lease in ms
-- ARGV[5] requestMs: how long the request key lasts, in ms
-- Returns 1 when the hold's ID is to after the call, 2 when it stays from
-- (re-entered: not raised), 0 when owner does not hold the lock under from
-- (nor under to).
local hash, fence, req = KEYS[1], KEYS[2], KEYS[3]
local owner, from, to, leaseMs, requestMs = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
requireMaster()

local seen = redis.call('get', req)
if seen then
  return tonumber(seen)
end

-- reply remembers n as the raise's reply, and returns it.
local function reply(n)
  redis.call('set', req, n, 'px', requestMs)
  return n
end

if redis.call('hexists', hash, owner) == 0 then
  return reply(0)
end
local held = redis.call('get', fence)
if held == to then
  return reply(1)
end
if held ~= from then
  return reply(0)
end
if tonumber(redis.call('hget', hash, owner)) > 1 then
  return reply(2)
end
-- The counter keeps its expiry, which a renewal may have moved past to's
-- own (see Footprint), and outlives to's time by two leases too.
redis.call('set', fence, to, 'keepttl')
redis.call('pexpireat', fence, fenceUntil(tonumber(to), leaseMs), 'gt')
return reply(1)
