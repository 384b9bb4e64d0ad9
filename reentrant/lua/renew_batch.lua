-- Renew a list of holds of any kinds, plain locks' and shared
-- resources', each as renewLock or renewShare does (see renew.lua and
-- shared_renew.lua). On a cluster every key must be in one slot: the
-- caller groups holds by slot.
-- KEYS: each hold's keys in turn: a lock's hash and fence; a shared
-- resource's hash and leases, and a semaphore's size after them (its
-- renewal keeps the size past the lease, see keepSize)
-- ARGV[3i-2] owner: the owner of hold i
-- ARGV[3i-1] token: the token of hold i; a shared resource's hold
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
local k = 1 -- the first key of hold i
for i = 1, (#ARGV - 1) / 3 do
  local owner, token, mode = ARGV[3 * i - 2], ARGV[3 * i - 1], ARGV[3 * i]
  if mode == '' then
    renewed[i] = renewLock(KEYS[k], KEYS[k + 1], owner, token, leaseMs)
    k = k + 2
  else
    now = now or nowMs()
    local r = {hash = KEYS[k], leases = KEYS[k + 1]}
    k = k + 2
    if mode == 'p' then
      r.sizeKey, k = KEYS[k], k + 1
    end
    renewed[i] = renewShare(r, owner, token, mode, leaseMs, now)
  end
end
return renewed
