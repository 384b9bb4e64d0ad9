-- Acquire of a set of keys all or none, as bsm/redislock's ObtainMulti
-- does, written for the bench from its rule: MSETNX of every key to the
-- holder's token, which sets them all only when none exists, then the
-- lease on each. Its keys must share a slot.
-- KEYS the lock keys. ARGV[1] token, ARGV[2] lease ms.
-- Returns 1 when every key was taken, 0 when none was.
local args = {}
for _, key in ipairs(KEYS) do
  args[#args + 1] = key
  args[#args + 1] = ARGV[1]
end
if redis.call('msetnx', unpack(args)) == 0 then
  return 0
end
for _, key in ipairs(KEYS) do
  redis.call('pexpire', key, ARGV[2])
end
return 1
