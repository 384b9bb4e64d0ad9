-- The baton pass, shared by every script that can leave a lock free (it is
-- prepended to them): hand a free lock to the oldest live waiter.
--
-- The queue (a list of waiter IDs, oldest first) and the waiters (a hash of
-- waiter ID -> JSON {o = owner, l = lease in ms, c = grant channel, a =
-- liveness key, where used}) live under the lock's hash tag. A waiter is live when its client's
-- subscription receives the grant: PUBLISH and SPUBLISH return how many
-- clients received it, and that count is exact on a single node and on a
-- shard's master. A waiter nobody received is dropped and the next is
-- tried, up to grantTries per script; a lock left free with waiters behind
-- it is granted by the next script that finds it so (a waiter's re-check).
-- Where a waiter may listen on another node than this one
-- ('publish-alive': PUBLISH on a cluster, or a Sentinel client on a
-- demoted master), the count misses receivers the message still reaches,
-- so a message sent cannot be taken back. There the waiter's liveness key,
-- which each of its looks sets for a few seconds, is checked first: a
-- waiter without one is dropped unpublished, and every grant published is
-- kept.
--
-- The grant is published before any write, so a missing channel permission
-- aborts the script with the lock as it was.
local grantTries = 16

-- nextToken is the token of a new hold: the larger of the counter's next
-- value and the server clock in microseconds (see acquire).
local function nextToken(fence)
  local now = redis.call('time')
  local clock = tonumber(now[1]) * 1000000 + tonumber(now[2])
  return math.max(tonumber(redis.call('get', fence) or 0) + 1, clock)
end

-- take makes owner the holder of the lock, with lease ms and a new token,
-- and returns the token. With clear, whatever hold was left in the hash
-- goes first.
local function take(hash, fence, owner, lease, token, clear)
  token = token or nextToken(fence)
  if clear then
    redis.call('del', hash)
  end
  redis.call('hset', hash, owner, 1)
  redis.call('pexpire', hash, lease)
  redis.call('set', fence, string.format('%d', token))
  return token
end

-- grant hands the free lock to the oldest live waiter. self is the calling
-- waiter's ID, if any: it is live without a message. It returns the granted
-- waiter's ID and token, or nil when no live waiter was found.
local function grant(hash, fence, queue, waiters, granted, publish, self)
  for _ = 1, grantTries do
    local id = redis.call('lindex', queue, 0)
    if not id then
      return nil
    end
    local w = redis.call('hget', waiters, id)
    local token, received
    if w then
      w = cjson.decode(w)
      token = nextToken(fence)
      -- The token goes as a string: cjson would round it.
      local function message()
        return id .. ' ' .. cjson.encode({t = string.format('%d', token), o = w.o, k = hash})
      end
      if id == self then
        received = 1
      elseif publish ~= 'publish-alive' then
        received = redis.call(publish, w.c, message())
      elseif w.a and redis.call('pttl', w.a) ~= -2 then
        redis.call('publish', w.c, message())
        received = 1
      else
        received = 0
      end
    end
    redis.call('lpop', queue)
    if w then
      redis.call('hdel', waiters, id)
      if received > 0 then
        take(hash, fence, w.o, w.l, token, true)
        -- A waiter that missed the message finds its grant here.
        redis.call('set', granted, id .. ' ' .. string.format('%d', token), 'px', w.l)
        return id, token
      end
    end
  end
  return nil
end
