-- Release of a set taken by obtain_multi.lua: when every key still holds
-- the holder's token, all are deleted; else none is (a lease ran out).
-- KEYS the lock keys. ARGV[1] token.
-- Returns 1 when released, 0 when not held.
local values = redis.call('mget', unpack(KEYS))
for i = 1, #KEYS do
  if values[i] ~= ARGV[1] then
    return 0
  end
end
redis.call('del', unpack(KEYS))
return 1
