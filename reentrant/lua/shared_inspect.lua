-- Read a shared resource's state without changing it. Holds whose
-- lease has run out by the server clock are left out, as every other
-- script would purge them.
-- KEYS[1] hash: the holds (see shared.lua)
-- KEYS[2] leases: the holds' lease deadlines
-- KEYS[3] queue: the waiters
-- KEYS[4] fence: the fencing-token counter
-- KEYS[5] sizeKey: the semaphore's size; absent for a read-write lock
-- Returns {used, size, lastToken, queued, then for each hold: mode, owner,
-- count, weight, token, ms left}: size is -1 when none is stored (always,
-- for a read-write lock), lastToken 0 when none was ever issued.
local hash, leases, queue, fence, sizeKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]

local now = nowMs()
local size = sizeKey and tonumber(redis.call('get', sizeKey)) or -1
local state = {0, size, tonumber(redis.call('get', fence) or 0), redis.call('llen', queue)}
local live = redis.call('zrangebyscore', leases, '(' .. now, '+inf', 'withscores')
for i = 1, #live, 2 do
  local held = parseHold(redis.call('hget', hash, live[i]))
  if held then
    state[1] = state[1] + held.n
    local mode, owner = string.match(live[i], '^(%a):(.*)$')
    for _, v in ipairs({mode, owner, held.c, held.n, tonumber(held.t), tonumber(live[i + 1]) - now}) do
      state[#state + 1] = v
    end
  end
end
return state
