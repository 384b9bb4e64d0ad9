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

-- ownerScan is how many queue entries a grant to a given owner reads for
-- that owner's other waiters (see wakeOwner).
local ownerScan = 64

-- wakeOwner wakes the waiters of owner, a given owner (WithOwner) just
-- granted the lock, among the first ownerScan entries of the queue: each
-- looks again, and re-enters the hold its owner now has, as a new call of
-- the owner would (acquire.lua), instead of waiting behind it for its
-- periodic look. A wake-up is no grant (see nudge); a waiter further back
-- re-enters at its next look. It runs after the grant's writes, as nudge
-- does: a server that refuses writes refused the script before it.
local function wakeOwner(queue, owner, publish)
  for _, rec in ipairs(redis.call('lrange', queue, 0, ownerScan - 1)) do
    local w = parseWaiter(rec)
    if w and w.given and w.o == owner then
      deliver(publish, w.c, w.a, w.id .. ' wake')
    end
  end
end

-- grant hands the free lock to the oldest live waiter, and wakes the other
-- waiters of its owner where that owner is given (wakeOwner). self is the calling
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
      -- The key names the waiter until its look claims the grant or its
      -- leave gives the count back, whichever comes first: a waiter that
      -- missed the message finds its grant here, and the grant's one count
      -- is given back once, never another call's count of a given owner.
      -- Every waiter is named, one of a made owner too: the hand-back of a
      -- grant message cannot tell the two apart.
      redis.call('set', granted, w.id .. ' ' .. formatToken(token), 'px', lease)
      if w.given then
        wakeOwner(queue, w.o, publish)
      end
      return w.id, token
    end
  end
  return nil, nil, redis.call('lindex', queue, 0) ~= false
end

-- nudge wakes one waiter of the wake records (see enqueue, record.lua):
-- the oldest live one (the one whose waiter looked longest ago, most
-- likely the head of the queue of the node it waits on, whom a grant
-- there wakes too), whose record it takes out, and none once it finds
-- none live among grantTries. A wake-up is no grant: its message ("<id>
-- wake") only makes the waiter look again, on every node, and a waiter
-- that has gone ignores it (its leave passes the wake-up on: leave.lua).
-- Records past their time are dropped first.
local function nudge(wake, publish)
  redis.call('zremrangebyscore', wake, '-inf', formatToken(math.floor(clockToken() / 1000)))
  for _ = 1, grantTries do
    local oldest = redis.call('zpopmin', wake)
    if #oldest == 0 then
      return
    end
    local w = parseWaiter(oldest[1])
    if w and deliver(publish, w.c, w.a, w.id .. ' wake') then
      return
    end
  end
end

-- passOn hands on a lock whose last hold is being given up: to the oldest
-- live waiter (see grant), or, when it granted nobody, to nobody, by
-- deleting the hash, and then, given the wake records (wake), it wakes
-- one waiter of those (nudge). last is the fencing counter's value, if the
-- caller has read it (see nextToken). It returns true when it granted
-- nobody but left entries in the queue (grant's left): the lock is then
-- free behind them, and the script's reply tells the client to run
-- pass.lua.
local function passOn(hash, fence, queue, granted, publish, last, wake)
  local id, _, left = grant(hash, fence, queue, granted, publish, '', last)
  if id then
    return false
  end
  -- The granted key goes with the hold whose grant it names.
  redis.call('del', hash, granted)
  if wake then
    nudge(wake, publish)
  end
  return left
end
