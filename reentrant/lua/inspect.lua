-- Read a lock's state without changing it.
-- KEYS[1] hash: the lock hash
-- KEYS[2] fence: the fencing-token counter
-- Returns {pttl, lastToken, owner1, count1, owner2, count2, ...}.
local hash, fence = KEYS[1], KEYS[2]

local state = {redis.call('pttl', hash), tonumber(redis.call('get', fence) or 0)}
local fields = redis.call('hgetall', hash)
for i = 1, #fields do
  state[#state + 1] = fields[i]
end
return state
