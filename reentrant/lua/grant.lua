-- Library (see script.go): the baton pass, shared by every script that can
-- leave a lock free: hand a free lock to the oldest live waiter. The
-- protocol is the package doc's (doc.go: The baton pass, Liveness,
-- Draining); what the code must keep:
--   - a waiter is live as deliver (publish.lua) judges it; with
--     'publish-alive' every grant published is kept, and its lease is the
--     record's unconfirmed one until the waiter confirms it;
--   - a dead waiter's record is dropped; up to grantTries per script, which
--     bounds how long one script blocks the server;
--   - the grant is published before any write: if the channel is refused
--     (an ACL without it), the script fails with the lock and the queue as
--     they were;
--   - nothing is published where the writes would be refused (see
--     writeProbe, publish.lua).

-- grantTries is how many queue entries one script tries before it gives
-- up with entries left (see grant).
local grantTries = 16

-- take makes owner the holder of the lock, with lease ms and token, in
-- place of whatever hold was left in the hash.
local function take(hash, fence, owner, lease, token)
  redis.call('del', hash)
  redis.call('hset', hash, owner, 1)
  redis.call('pexpire', hash, lease)
  setFence(fence, token, lease)
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
    local token, live = nil, false
    if w then
      token, live = nextToken(fence, last), true
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
      live = deliver(publish, w.c, w.a, msg)
    end
    redis.call('lpop', queue)
    if live then
      -- The caller's own grant is confirmed by this very call.
      local lease = w.id == self and w.l or w.u
      take(hash, fence, w.o, lease, token)
      if w.given then
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

-- passOn hands on a lock whose last hold is being given up: to the oldest
-- live waiter (see grant), or, when it granted nobody, to nobody, by
-- deleting the hash. last is the fencing counter's value, if the caller
-- has read it (see nextToken). It returns true when it granted nobody but
-- left entries in the queue (grant's left): the lock is then free behind
-- them, and the script's reply tells the client to run pass.lua.
local function passOn(hash, fence, queue, granted, publish, last)
  local id, _, left = grant(hash, fence, queue, granted, publish, '', last)
  if id then
    return false
  end
  redis.call('del', hash)
  return left
end
