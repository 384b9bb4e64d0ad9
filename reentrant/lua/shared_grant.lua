-- Library (see script.go): the grant of a shared resource, shared by
-- every script that can free some of its size. The protocol is the package
-- doc's (Shared resources); what the code must keep:
--   - fits is the one rule: a waiter fits when used + its weight <= size;
--     a waiter whose owner already holds in its mode joins that hold (a
--     re-entry takes no weight), except for permits, which are never
--     re-entered: such a record is dropped, as one heavier than the size;
--   - strict FIFO with head-of-line blocking: a grant admits the run of
--     consecutive heads that fit and stops at the first that does not;
--   - a waiter is live as deliver (publish.lua) judges it, and one message
--     goes to each grant channel, carrying the grants of all its waiters
--     in the run; the waiters of a channel nobody received are dropped,
--     which frees what they would have taken, and the grant goes on;
--   - every message is published before any write (a refused channel
--     fails the script with the holds and the queue as they were), after
--     writeProbe (publish.lua); planGrants only reads and publishes, and
--     commitGrants writes what it planned;
--   - tokens: a write or permits take the next token (nextToken), each
--     higher than the last; a read takes the counter's value, the last
--     token granted (a write's, or a read's, below), so reads side by side
--     share it, and with no counter (lost, or expired) it takes the next
--     token as a write does, so that it is never below a token before it;
--   - a new hold gets a hold ID of its own (newHoldID), and a grant that
--     joins its owner's hold gets that hold's: the grant message carries
--     it, and the client acts on the hold only under it;
--   - one plan examines at most grantBatch queue entries, which bounds how
--     long one script blocks the server; one that stops there says so
--     (left), and the client runs shared_pass.lua;
--   - a write's grant also admits its owner's queued reads (see
--     admitReadsInside), wherever they are among the entries one plan may
--     read.

-- grantBatch bounds the queue entries one plan examines (grants and drops).
local grantBatch = 1024

-- firstRead is how many queue entries a plan reads first; each later read
-- takes at least three times what it has read. Reading is cheap: an entry
-- costs when it is parsed (see parseQueue).
local firstRead = 4

-- readQueue appends the next queue entries, unparsed, to plan.raw: up to
-- entry upto at least.
local function readQueue(r, plan, upto)
  local from = #plan.raw
  local want = math.min(math.max(firstRead, from * 3, upto - from), grantBatch - from)
  local more = want > 0 and redis.call('lrange', r.queue, from, from + want - 1) or {}
  plan.ended = want > 0 and #more < want
  for i, rec in ipairs(more) do
    plan.raw[from + i] = rec
  end
end

-- parseQueue appends the next queue entries to plan.recs, each parsed,
-- with the hold its owner has in its mode, if any (one HMGET for the lot):
-- none where the caller is ending every hold (r.cleared) or that one
-- (r.gone). Parsing is what an entry costs, so it parses as many as it
-- has parsed (at least one) while they are few, then three times as many:
-- a head that does not fit costs one, and k admitted waiters at most about
-- 4k in log4(k) HMGETs.
local function parseQueue(r, plan)
  local from = #plan.recs
  local to = from + (from < 4 and math.max(from, 1) or 3 * from)
  if to > #plan.raw and not plan.ended then
    readQueue(r, plan, to)
  end
  local fields = {}
  for i = from + 1, math.min(#plan.raw, to) do
    local w = parseSharedWaiter(plan.raw[i])
    if w then
      w.f = holdField(w.m, w.o)
      fields[#fields + 1] = w.f
    end
    plan.recs[i] = w or false
  end
  if #fields > 0 and not r.cleared then
    local holds = redis.call('hmget', r.hash, unpack(fields))
    local j = 0
    for i = from + 1, #plan.recs do
      local w = plan.recs[i]
      if w then
        j = j + 1
        if w.f ~= r.gone then
          w.held = parseHold(holds[j])
        end
      end
    end
  end
end

-- issue gives grant g (mode g.m), a new hold, its hold ID and its token:
-- for a read, the last token granted (plan.last) if there is one, else, as
-- for a write or permits, the next one, which it marks g.fresh. The counter
-- is read once: by the write probe (see publishRun) when g is another
-- waiter's, whose grant is published, so that the probe costs no call of
-- its own.
local function issue(r, plan, g)
  if plan.fence == nil then
    if g.id ~= plan.self then
      plan.fence, plan.probed = writeProbe(r.fence), true
    else
      plan.fence = redis.call('get', r.fence)
    end
    plan.last = plan.fence and tonumber(plan.fence)
  end
  g.hid = newHoldID(r, g.l)
  if g.m == 'r' and plan.last then
    g.t = plan.last
    return
  end
  plan.next = plan.next and exactToken(r.fence, plan.next + 1) or nextToken(r.fence, plan.fence, r.clock)
  g.t, g.fresh = plan.next, true
end

-- admit adds grant g to the plan: a new hold, or one more count of the hold
-- its owner has (held before, or granted earlier in this plan), which
-- takes no more of the size.
local function admit(plan, g)
  local h = plan.holds[g.f]
  if not h and g.held then
    h = {c = g.held.c, n = g.held.n, t = g.held.t, hid = g.held.hid, w = g.held.w}
    plan.holds[g.f] = h
    plan.fields[#plan.fields + 1] = g.f
  end
  -- A grant by message names its waiter; the caller's own is in its reply
  -- (and its request record), and names nobody.
  local name = g.id ~= plan.self and g.id or ''
  if h then
    h.c, h.w = h.c + 1, addName(h.w, name)
  else
    plan.holds[g.f] = {c = 1, n = g.n, t = g.t, hid = g.hid, w = name}
    plan.fields[#plan.fields + 1] = g.f
    plan.used = plan.used + g.n
  end
  if g.fresh and not h then
    -- The counter keeps the last token granted; a token issued to a
    -- waiter found dead was never heard of, and is not kept.
    plan.written, plan.writtenMs, plan.last = g.t, g.l, g.t
  end
  plan.grants[#plan.grants + 1] = g
  if g.id == plan.self then
    plan.mine = plan.holds[g.f]
  end
  if g.m == 'w' and g.given then
    plan.write = g
  end
end

-- selectRun returns the run of consecutive heads from plan.examined on that
-- fit within size, each given its token and hold ID, and the position it stopped at:
-- the first head that does not fit, or the end of what the plan may read.
-- Entries it skips (unreadable, heavier than size, permits of an owner
-- that holds permits) are passed over, to be dropped with the run.
local function selectRun(r, plan, size)
  local run, used, n = {}, plan.used, plan.examined
  local joined = {}
  while true do
    if n == #plan.recs then
      parseQueue(r, plan)
    end
    local w = plan.recs[n + 1]
    if w == nil then
      return run, n
    end
    local held = w and (w.held or plan.holds[w.f] or joined[w.f])
    if w and w.n <= size and not (held and w.m == 'p') then
      if held then
        w.t, w.hid = held.t, held.hid
      elseif used + w.n > size then
        return run, n
      else
        used = used + w.n
        issue(r, plan, w)
        joined[w.f] = w
      end
      run[#run + 1] = w
    end
    n = n + 1
  end
end

-- grantMessage is the one message to a grant channel for waiters ws: their
-- IDs joined by commas (notify hands the payload to each), a space, and a
-- JSON object with the resource's hash key (k) and, by waiter ID, each
-- grant (g): its token (t) and hold ID (h; strings: cjson would round
-- them), owner (o) and mode (m), its permits (n, for permits only: a mode of a read-write lock
-- says its weight), and the lease it has until confirmed (u), if shorter.
local function grantMessage(r, ws)
  local ids, grants = {}, {}
  for i, w in ipairs(ws) do
    ids[i] = w.id
    local g = {t = formatToken(w.t), h = formatToken(w.hid), o = w.o, m = w.m}
    if w.m == 'p' then
      g.n = w.n
    end
    if w.u ~= w.l then
      g.u = tonumber(w.u)
    end
    grants[w.id] = g
  end
  return table.concat(ids, ',') .. ' ' .. cjson.encode({k = r.hash, g = grants})
end

-- publishRun publishes run's grants, one message per grant channel, and
-- returns the set of channels whose waiters are live. The caller's own
-- waiter self is live without a message.
local function publishRun(r, plan, run, self)
  local channels, byChannel = {}, {}
  for _, w in ipairs(run) do
    if w.id ~= self then
      if not byChannel[w.c] then
        byChannel[w.c] = {}
        channels[#channels + 1] = w.c
      end
      table.insert(byChannel[w.c], w)
    end
  end
  local live = {}
  for _, c in ipairs(channels) do
    if not plan.probed then
      writeProbe(r.fence)
      plan.probed = true
    end
    local ws = byChannel[c]
    live[c] = deliver(r.publish, c, ws[1].a, grantMessage(r, ws))
  end
  return live
end

-- admitReadsInside adds to plan the queued reads of the owner of plan.write,
-- the write it granted (to an owner not made for one call: only such an
-- owner's reads can be queued with it), wherever they are among the
-- entries a plan may read: a read inside its owner's own write is granted
-- at once, past the queue and the size, with the write's token (or joins
-- the read its owner holds), so it does not wait for its next look. They
-- leave the queue by value (plan.removed), as they need not be at its head.
local function admitReadsInside(r, plan)
  local write = plan.write
  if not plan.ended then
    readQueue(r, plan, grantBatch)
  end
  local field, run = holdField('r', write.o), {}
  for i = plan.examined + 1, #plan.raw do
    local rec = plan.raw[i]
    local w = string.sub(rec, 1, 2) == 'r ' and string.sub(rec, -#write.o) == write.o and parseSharedWaiter(rec)
    if w and w.o == write.o and w.given then
      w.f, w.rec = field, rec
      run[#run + 1] = w
    end
  end
  if #run == 0 then
    return
  end
  local held = not r.cleared and r.gone ~= field and parseHold(redis.call('hget', r.hash, field)) or nil
  -- They all join one hold: the read the owner holds, or one this plan
  -- granted it, or a new one with a hold ID of its own.
  local joined = held or plan.holds[field]
  local hid = joined and joined.hid or newHoldID(r, run[1].l)
  for _, w in ipairs(run) do
    w.held, w.t, w.hid = held, (joined or write).t, hid
  end
  local live = publishRun(r, plan, run, plan.self)
  plan.removed = {}
  for _, w in ipairs(run) do
    if w.id == plan.self or live[w.c] then
      admit(plan, w)
    end
    plan.removed[#plan.removed + 1] = w.rec
  end
end

-- planTake adds to plan the caller's own hold, taken without waiting, or
-- one more count of the hold its owner got in this plan: g has f, m, n and
-- o (see parseSharedWaiter), id (the caller's waiter ID, '' for none) and
-- l (the lease it asks for). It sets plan.mine.
local function planTake(r, plan, g)
  g.u = g.l
  local h = plan.holds[g.f]
  if h then
    g.t, g.hid = h.t, h.hid
  else
    issue(r, plan, g)
  end
  admit(plan, g)
end

-- planGrants grants what fits of the queue's head, when used is taken of
-- size (nil when unknown: then nothing), and publishes the grants; self is the caller's own waiter ID, if
-- any. It writes nothing: commitGrants writes the plan. The plan has
-- grants (each with f, m, n, o, t, hid, id, l, u), holds (by field, what the
-- granted holds will be), mine (the caller's own, if granted), used (after
-- them), examined (the queue entries to drop), rest (whether entries are
-- left behind them) and left (it stopped at grantBatch, before a head it
-- did not judge).
local function planGrants(r, used, size, self)
  local plan = {raw = {}, recs = {}, ended = false, examined = 0, used = used, grants = {}, holds = {}, fields = {},
    self = self}
  if not size then
    -- The size is unknown (see resource): nothing can be judged to fit.
    plan.rest = redis.call('exists', r.queue) == 1
    return plan
  end
  while true do
    local run, n = selectRun(r, plan, size)
    local live = #run > 0 and publishRun(r, plan, run, self) or {}
    local dead = false
    for _, w in ipairs(run) do
      if w.id == self or live[w.c] then
        admit(plan, w)
      else
        dead = true
      end
    end
    plan.examined = n
    local atEnd = n == #plan.recs
    -- A dead waiter freed what it would have taken: the head that did not
    -- fit may fit now.
    if not dead or atEnd then
      plan.rest = not (atEnd and plan.ended)
      plan.left = atEnd and not plan.ended
      if plan.write and plan.rest then
        admitReadsInside(r, plan)
      end
      return plan
    end
  end
end

-- commitGrants writes plan (see planGrants): drops the examined entries
-- from the queue and gives the holds granted each a lease from now (server
-- ms): the one its waiter asked for when it is the caller's own
-- (plan.self, which is '' for a call without a waiter), else the one it
-- has until confirmed. A lease is never shortened, and a semaphore's size
-- is kept past the longest (keepSize). It returns the holds'
-- fields and values (nil for none), which the caller writes as it settles
-- (settle).
local function commitGrants(r, plan, now)
  r.first = nil
  if plan.examined > 0 then
    redis.call('ltrim', r.queue, plan.examined, '-1')
  end
  for _, rec in ipairs(plan.removed or {}) do
    redis.call('lrem', r.queue, 1, rec)
  end
  if #plan.grants == 0 then
    return nil
  end
  local holds, leases = {}, {}
  for _, f in ipairs(plan.fields) do
    local h = plan.holds[f]
    holds[#holds + 1] = f
    holds[#holds + 1] = formatHold(h.c, h.n, h.t, h.hid, h.w)
  end
  -- A deadline goes as a string (see purgeMax), made once per lease: the
  -- grants of a batch mostly ask for the same.
  local deadlines, longest = {}, 0
  for _, g in ipairs(plan.grants) do
    local lease = g.id == plan.self and g.l or g.u
    if not deadlines[lease] then
      deadlines[lease] = formatToken(now + tonumber(lease))
      longest = math.max(longest, tonumber(lease))
    end
    leases[#leases + 1] = deadlines[lease]
    leases[#leases + 1] = g.f
  end
  redis.call('zadd', r.leases, 'gt', unpack(leases))
  keepSize(r, now, longest)
  if plan.written then
    setFence(r.fence, plan.written, plan.writtenMs)
  end
  return holds
end

-- finish writes plan (commitGrants) and settles, when the plan changed
-- anything. A size found missing is stored only with a hold or a waiter
-- that depends on it (keepSize).
local function finish(r, plan, now)
  if plan.examined == 0 and #plan.grants == 0 then
    return
  end
  settle(r, plan.used, commitGrants(r, plan, now))
end

-- grantQueue grants what fits of the queue's head (see planGrants), the
-- caller asking for nothing itself, and writes it: the grant of a script
-- that frees nothing itself, but may have unblocked the queue (a pass, a
-- leave of the queue's head). It returns whether the grant stopped at its
-- bound (the plan's left).
local function grantQueue(r, now)
  local plan = planGrants(r, purge(r, now), r.size, '')
  finish(r, plan, now)
  return plan.left
end

-- leaveHold ends one count of held, the hold at field, of a resource whose
-- holds use used (see purge). The last count frees the hold's weight, and
-- what fits of the queue is granted in the same script: its messages go
-- out before the hold is deleted. It returns the count left, and whether
-- the grant stopped at its bound (the plan's left).
local function leaveHold(r, field, held, used, now)
  if held.c > 1 then
    redis.call('hset', r.hash, field, formatHold(held.c - 1, held.n, held.t, held.hid, held.w))
    return held.c - 1, false
  end
  r.gone = field
  local plan = planGrants(r, used - held.n, r.size, '')
  redis.call('hdel', r.hash, field)
  redis.call('zrem', r.leases, field)
  settle(r, plan.used, commitGrants(r, plan, now))
  return 0, plan.left
end
