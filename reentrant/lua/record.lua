-- Library (see script.go): the queue record's reader. The format is
-- defined once, in record.go, where Waiter.record writes it;
-- TestRecordRoundTrip holds this reader to it.

-- parseWaiter reads a queue record, from byte init on (1 if nil). It
-- returns a table with id (the waiter's ID), l (its lease in ms, a string),
-- u (its lease until confirmed, in ms, a string), given (whether its owner
-- is given), c (its grant channel), a (its liveness key, nil for none) and
-- o (its owner); or nil for anything else (an entry written by another
-- version of baton). The strings are cut from rec where they lie: no copy
-- of its rest is made.
local function parseWaiter(rec, init)
  local id, lease, unconfirmed, given, nc, na, at =
    string.match(rec, '^(%S+) (%d+) (%d+) ([01]) (%d+) (%d+) ()', init)
  if not id then
    return nil
  end
  nc, na = tonumber(nc), tonumber(na)
  local w = {id = id, l = lease, u = unconfirmed, given = given == '1', c = string.sub(rec, at, at + nc - 1),
    o = string.sub(rec, at + nc + na)}
  if na > 0 then
    w.a = string.sub(rec, at + nc, at + nc + na - 1)
  end
  return w
end

-- parseSharedWaiter reads a queue record of a shared resource: the
-- mode and the weight, then a record parseWaiter reads. It returns
-- parseWaiter's table with m (the mode: 'r', 'w' or 'p') and n (the
-- weight, a number) added; or nil for anything else.
local function parseSharedWaiter(rec)
  local mode, weight, at = string.match(rec, '^([rwp]) (%d+) ()')
  local w = mode and parseWaiter(rec, at)
  if not w then
    return nil
  end
  w.m, w.n = mode, tonumber(weight)
  return w
end

-- enqueue makes the calling waiter's record part of the queue, once however
-- often its call is repeated (a look, a resend), and, where liveness is
-- judged by key, keeps its client's liveness key: every look of a waiter
-- says its client is alive. A call with no waiter (record '') changes
-- nothing. The queue lasts at least leaseMs, the waiter's lease, from each
-- look (never shortened): a waiter looks at least every third of its
-- lease, so a queue expires only once none of its waiters looks.
--
-- A look that does not queue (wake, the lock's wake records, given: see
-- Waiter.Unqueued) leaves the record in the wake records instead, once,
-- until the waiter's liveness TTL from this look (the record's
-- unconfirmed lease: the liveness key's TTL where there is one, else the
-- lease; the waiter looks at least every third of it). It is never
-- granted from there: a script that frees the lock wakes it (nudge, in
-- grant.lua), and its leave removes it.
local function enqueue(queue, record, aliveKey, aliveMs, leaseMs, wake)
  if record == '' then
    return
  end
  if wake then
    local ms = tonumber(parseWaiter(record).u)
    local now = math.floor(clockToken() / 1000)
    redis.call('zremrangebyscore', wake, '-inf', formatToken(now))
    local new = redis.call('zadd', wake, formatToken(now + ms), record) == 1 and redis.call('zcard', wake) == 1
    redis.call('pexpire', wake, ms, new and 'nx' or 'gt')
  else
    -- A new queue has no expiry, which PEXPIRE GT takes for an infinite one.
    local new = not redis.call('lpos', queue, record) and redis.call('rpush', queue, record) == 1
    redis.call('pexpire', queue, leaseMs, new and 'nx' or 'gt')
  end
  if aliveKey ~= '' then
    redis.call('set', aliveKey, 1, 'px', aliveMs)
  end
end
