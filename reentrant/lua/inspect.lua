-- Read a lock's state without changing it.
-- KEYS[1] lock hash, KEYS[2] fencing counter
-- Returns {pttl, lastToken, owner1, count1, owner2, count2, ...}.
local state = {redis.call('pttl', KEYS[1]), tonumber(redis.call('get', KEYS[2]) or 0)}
local fields = redis.call('hgetall', KEYS[1])
for i = 1, #fields do
  state[#state + 1] = fields[i]
end
return state
