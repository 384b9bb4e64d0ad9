-- Renew a list of holds of any kinds, plain locks' and multi-holder
-- resources', each as renewLock or renewShare does (see renew.lua and
-- shared_renew.lua). On a cluster every key must be in one slot: the
-- caller groups holds by slot.
-- KEYS[2i-1], KEYS[2i] of hold i: a lock's hash and fence; a multi-holder
-- resource's hash and leases
-- ARGV[3i-2] owner: the owner of hold i
-- ARGV[3i-1] token: the token of hold i; a multi-holder resource's hold
-- ID (see newHoldID)
-- ARGV[3i] mode: the mode of hold i in its resource; '' for a lock
-- ARGV[#ARGV] leaseMs: the lease in ms, for every hold (last, so that the
-- first argument is an owner, as in the other scripts)
-- Returns an array with, for each hold in turn, 1 when it has at least
-- leaseMs left, 0 when its owner does not hold it under its token.
local leaseMs = tonumber(ARGV[#ARGV])
requireMaster()

local now -- the server clock in ms, read once, by the first shared hold
local renewed = {}
for i = 1, #KEYS / 2 do
  local hash, other = KEYS[2 * i - 1], KEYS[2 * i]
  local owner, token, mode = ARGV[3 * i - 2], ARGV[3 * i - 1], ARGV[3 * i]
  if mode == '' then
    renewed[i] = renewLock(hash, other, owner, token, leaseMs)
  else
    now = now or nowMs()
    renewed[i] = renewShare(hash, other, owner, token, mode, leaseMs, now)
  end
end
return renewed
