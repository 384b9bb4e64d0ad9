-- The baton pass, shared by every script that can leave a lock free (it is
-- prepended to them): hand a free lock to the oldest live waiter.
--
-- The queue is a list under the lock's hash tag, oldest first. Each element
-- is one waiter's record, all its grant needs (see parseWaiter). A waiter
-- is live when its client's subscription receives the grant: PUBLISH and SPUBLISH return how many clients received
-- it, and that count is exact on a single node and on a shard's master. A
-- waiter nobody received is dropped and the next is tried, up to grantTries
-- per script, which bounds how long one script blocks the server. A script
-- that runs out of tries with entries left says so in its reply: the lock
-- is then free with a queue behind it, which nobody may take past (see
-- acquire.lua), and the client runs the grant again (pass.lua) until it
-- grants someone or empties the queue; any waiter's look grants too.
-- Where a waiter may listen on another node than this one
-- ('publish-alive': PUBLISH on a cluster, or a Sentinel client on a
-- demoted master), the count misses receivers the message still reaches,
-- so a message sent cannot be taken back. There the waiter's liveness key,
-- which each of its looks sets for a few seconds, is checked first: a
-- waiter without one is dropped unpublished, and every grant published is
-- kept. Such a grant's lease is at most the liveness key's TTL until the
-- waiter confirms it (renews, or looks again): a waiter that crashed while
-- its key still lived holds the lock that long, not its whole lease.
--
-- The grant is published before any write: if the channel is refused (an
-- ACL without it), the script fails with the lock and the queue as they
-- were. And nothing is published where the writes would be refused: a
-- waiter listening on a replica (a demoted master a client still reaches
-- after a failover), or on a master short of min-replicas-to-write, would
-- believe in a grant never made. So before its first message a script
-- runs writeProbe, which Redis refuses there as it would any write.
local grantTries = 16

-- writeProbe is a write that changes nothing: GETEX without options reads
-- the fencing counter (always a string) and touches neither value nor TTL,
-- but is flagged as a write, and Redis judges a script's commands by their
-- flags (READONLY on a replica, NOREPLICAS, MISCONF) before running them.
-- It is not flagged deny-oom, so a full server still lets a lock go.
local function writeProbe(fence)
  redis.call('getex', fence)
end

-- formatToken prints a token: they are around 1.7e15 (microseconds), which
-- Lua numbers hold exactly but '..' would print as floats.
local function formatToken(token)
  return string.format('%d', token)
end

-- clockToken is the server clock in microseconds: tokens follow it, so
-- they stay above every earlier token when the counter is lost (a restart
-- without data, a failover that lost the last increments).
local function clockToken()
  local now = redis.call('time')
  return tonumber(now[1]) * 1000000 + tonumber(now[2])
end

-- nextToken is the token of a new hold: the larger of the counter's next
-- value and the clock. last is the counter's value if the caller has read
-- it (false when it is missing), nil if not.
local function nextToken(fence, last)
  if last == nil then
    last = redis.call('get', fence)
  end
  return math.max(tonumber(last or 0) + 1, clockToken())
end

-- take makes owner the holder of the lock, with lease ms and token, and
-- returns the token. With clear, whatever hold was left in the hash goes
-- first.
local function take(hash, fence, owner, lease, token, clear)
  if clear then
    redis.call('del', hash)
  end
  redis.call('hset', hash, owner, 1)
  redis.call('pexpire', hash, lease)
  redis.call('set', fence, formatToken(token))
  return token
end

-- takeFree takes a free lock with nobody queued for owner: the counter is
-- read and written in one SET ... GET, and written again only when it is
-- ahead of the clock.
local function takeFree(hash, fence, owner, lease)
  local token = clockToken()
  local last = tonumber(redis.call('set', fence, formatToken(token), 'get') or 0)
  if last >= token then
    token = last + 1
    redis.call('set', fence, formatToken(token))
  end
  redis.call('hset', hash, owner, 1)
  redis.call('pexpire', hash, lease)
  return token
end

-- parseWaiter reads a queue record, as Waiter.record writes it:
-- "<id> <lease ms> <lease until confirmed, ms> <1 if the owner is shared,
-- else 0> <channel length> <liveness key length> <channel><liveness
-- key><owner>". It returns nil for anything else (an entry written by
-- another version of baton).
local function parseWaiter(rec)
  local id, lease, unconfirmed, shared, nc, na, rest =
    string.match(rec, '^(%S+) (%d+) (%d+) ([01]) (%d+) (%d+) (.*)$')
  if not id then
    return nil
  end
  nc, na = tonumber(nc), tonumber(na)
  local w = {id = id, l = lease, u = unconfirmed, shared = shared == '1', c = string.sub(rest, 1, nc),
    o = string.sub(rest, nc + na + 1)}
  if na > 0 then
    w.a = string.sub(rest, nc + 1, nc + na)
  end
  return w
end

-- grant hands the free lock to the oldest live waiter. self is the calling
-- waiter's ID, if any: it is live without a message. last is the fencing
-- counter's value, if the caller has read it (see nextToken). It returns
-- the granted waiter's ID and token; or, when it granted nobody, nil, nil
-- and whether entries are left: false when the queue is empty, true when it
-- dropped grantTries dead entries and more remain. The two must not be
-- confused: a lock is free for the taking only in the first case.
local function grant(hash, fence, queue, granted, publish, self, last)
  local probed = false
  for _ = 1, grantTries do
    local rec = redis.call('lindex', queue, 0)
    if not rec then
      return nil, nil, false
    end
    local w = parseWaiter(rec)
    local token, received = nil, 0
    if w then
      token, received = nextToken(fence, last), 1
    end
    if w and w.id ~= self then
      -- The token goes as a string: cjson would round it. A lease that
      -- holds only until confirmed goes too.
      local body = {t = formatToken(token), o = w.o, k = hash}
      if w.u ~= w.l then
        body.u = tonumber(w.u)
      end
      local msg = w.id .. ' ' .. cjson.encode(body)
      if not probed then
        writeProbe(fence)
        probed = true
      end
      if publish ~= 'publish-alive' then
        received = redis.call(publish, w.c, msg)
      elseif not (w.a and redis.call('pttl', w.a) ~= -2) then
        received = 0
      else
        redis.call('publish', w.c, msg)
      end
    end
    redis.call('lpop', queue)
    if received > 0 then
      -- The caller's own grant is confirmed by this very call.
      local lease = w.id == self and w.l or w.u
      take(hash, fence, w.o, lease, token, true)
      if w.shared then
        -- Its owner holding the lock does not tell this waiter that the
        -- grant was its own, as it does for an owner made for one call: a
        -- waiter that missed the message finds its grant here.
        redis.call('set', granted, w.id .. ' ' .. formatToken(token), 'px', lease)
      end
      return w.id, token
    end
  end
  return nil, nil, redis.call('lindex', queue, 0) ~= false
end
