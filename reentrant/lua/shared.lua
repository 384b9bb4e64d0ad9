-- Library (see script.go): the holds of a shared resource (a
-- read-write lock, a semaphore; see shared.go and the package doc's
-- Shared resources). What the code must keep:
--   - the hash has one field per hold, "<mode>:<owner>" (see holdField),
--     whose value is the hold (see formatHold), and the field 'used', the
--     sum of the holds' weights; the leases zset has one member per hold,
--     the same field, scored with the hold's lease deadline in server ms;
--   - a hold whose deadline has passed by the server clock is gone: every
--     script that reads the holds first purges them (purge), and no
--     script renews or reports one;
--   - while any hold is left, the hash and the zset expire at the latest
--     deadline (settle), so that an abandoned resource disappears by
--     itself; with none left, the hash is deleted;
--   - a semaphore's size expires a lease at least after the last deadline
--     of a hold and the last expiry of its queue (keepSize), never before.

-- purgeMax bounds the expired holds one script drops: a hold left behind
-- still counts as used, which only delays a grant until the next script.
-- It is a string, as every constant argument of redis.call here: a number
-- costs the call a float formatting.
local purgeMax = '1024'

-- resource names the keys and settings of one shared resource for
-- the library's functions, and reads its size. ids is the hold-ID counter
-- (see newHoldID); sizeKey is nil for a read-write lock; size is the size
-- to use, and store, when the resource has none stored ('0' when the
-- caller knows none: the size is then nil, unknown, and nothing is
-- granted).
local function resource(hash, leases, queue, fence, ids, sizeKey, size, publish)
  local r = {hash = hash, leases = leases, queue = queue, fence = fence, ids = ids, sizeKey = sizeKey,
    publish = publish}
  r.size = tonumber(size)
  if sizeKey then
    local stored = redis.call('get', sizeKey)
    r.storeSize = not stored and r.size > 0
    r.size = tonumber(stored) or r.size
  end
  if r.size == 0 then
    r.size = nil
  end
  return r
end

-- nowMs is the server clock in ms: the clock every lease deadline is on.
-- Given r, it keeps the reading in µs as r.clock, the clock of the tokens
-- the script issues (see issue): one reading serves the whole script,
-- which runs at one instant.
local function nowMs(r)
  local clock = clockToken()
  if r then
    r.clock = clock
  end
  return math.floor(clock / 1000)
end

-- newHoldID is the ID of a new hold (one that is not a re-entry, nor a
-- grant joining its owner's hold): unique per hold of the resource, so
-- that a release, renewal or re-entry meant for a hold that has ended
-- never acts on a later hold of the same owner and mode, which a read's
-- token (shared with every read since the last write) cannot tell apart.
-- IDs rise, in µs like tokens: each is the larger of the last ID's next
-- and the clock (r.clock, see nowMs), so they keep rising once the counter
-- has gone (expired, or lost). It reads the counter once a script; settle
-- writes the last ID issued (keepHoldIDs), so a script still publishes
-- before its first write.
-- leaseMs is the lease of the new hold: the counter outlives it (see
-- keepHoldIDs).
local function newHoldID(r, leaseMs)
  if not r.lastID then
    r.lastID = math.max(tonumber(redis.call('get', r.ids) or 0), r.clock - 1)
  end
  r.lastID = exactToken(r.ids, r.lastID + 1)
  r.idLeaseMs = math.max(r.idLeaseMs or 0, tonumber(leaseMs))
  return r.lastID
end

-- keepHoldIDs writes the last hold ID the script issued, if any, to the
-- counter, to expire as a fencing counter does (fenceUntil, token.lua):
-- two of the longest new hold's leases past the last ID's own time, in
-- server ms. So the counter outlives the holds it named, and, gone, is
-- below the clock: the clock floor keeps the next ID above every earlier
-- one, unless the clock steps back by two leases.
local function keepHoldIDs(r)
  if r.lastID then
    redis.call('set', r.ids, formatToken(r.lastID), 'pxat', fenceUntil(r.lastID, r.idLeaseMs))
  end
end

-- holdField is the field (and leases member) of owner's hold in mode.
local function holdField(mode, owner)
  return mode .. ':' .. owner
end

-- formatHold is a hold's value: "<count> <weight> <token> <id> <waiters>",
-- the hold count, the weight it takes, its token, its hold ID (newHoldID:
-- every count of the hold, granted or re-entered, has it), and the IDs,
-- joined by
-- commas, of the waiters it was granted to by a message whose count they
-- have neither claimed by a look nor left ('' for none): by its name a
-- waiter's look and leave know a count was granted to it, and each count
-- is given back once. A hold's owner may have several waiters in one grant
-- (WithOwner): each has its own name, so one's leave cannot give back
-- another's count.
local function formatHold(count, weight, token, id, waiter)
  return string.format('%d %d %d %d %s', count, weight, token, id, waiter)
end

-- named reports whether the waiter list w names waiter id.
local function named(w, id)
  return id ~= '' and string.find(',' .. w .. ',', ',' .. id .. ',', 1, true) ~= nil
end

-- addName is the waiter list w naming id too ('' names nobody).
local function addName(w, id)
  if id == '' or w == '' then
    return w .. id
  end
  return w .. ',' .. id
end

-- unname is the waiter list w without id.
local function unname(w, id)
  local s = ',' .. w .. ','
  local i = string.find(s, ',' .. id .. ',', 1, true)
  if not i then
    return w
  end
  s = string.sub(s, 1, i) .. string.sub(s, i + #id + 2)
  return string.sub(s, 2, -2)
end

-- parseHold reads formatHold's value: a table with c (the count), n (the
-- weight), t (the token), hid (the hold ID; both strings of digits, as
-- callers compare them) and w (the waiters named); nil for false (no such
-- field).
local function parseHold(v)
  if not v then
    return nil
  end
  local c, n, t, hid, w = string.match(v, '^(%d+) (%d+) (%d+) (%d+) (.*)$')
  return {c = tonumber(c), n = tonumber(n), t = t, hid = hid, w = w}
end

-- purge drops the holds whose deadline is at or before now (server ms),
-- up to purgeMax of them, and returns the weight the holds left use and,
-- given field, the hold at field if it is left (parseHold), read in the
-- same call. It looks at the first deadline first: when none has passed,
-- it keeps it as r.first (false for no hold), for earliestMs, until the
-- script changes the leases (commitGrants).
local function purge(r, now, field)
  local first = redis.call('zrange', r.leases, '0', '0', 'withscores')
  local got = field and redis.call('hmget', r.hash, 'used', field) or {redis.call('hget', r.hash, 'used')}
  local used, held = tonumber(got[1] or 0), parseHold(got[2])
  local deadline = #first > 0 and tonumber(first[2])
  if not deadline or deadline > now then
    r.first = deadline
    return used, held
  end
  local gone = redis.call('zrangebyscore', r.leases, '-inf', now, 'limit', '0', purgeMax)
  for _, v in ipairs(gone) do
    if v == field then
      held = nil
    end
  end
  for _, v in ipairs(redis.call('hmget', r.hash, unpack(gone))) do
    local h = parseHold(v)
    if h then
      used = used - h.n
    end
  end
  redis.call('zrem', r.leases, unpack(gone))
  if redis.call('exists', r.leases) == 0 then
    redis.call('del', r.hash)
    return 0, nil
  end
  redis.call('hdel', r.hash, unpack(gone))
  redis.call('hset', r.hash, 'used', used)
  return used, held
end

-- keepSize keeps a semaphore's size (r.sizeKey; a read-write lock has
-- none) for two leases of leaseMs (a number) from now (server ms), or
-- longer where it already lasts longer. Every script that takes, grants or
-- extends a hold, or queues a waiter, calls it with that hold's or
-- waiter's lease, so the size outlives by a lease at least everything
-- that depends on it (see the package doc's Shared resources): a
-- size found missing is stored from the caller's handle, which must never
-- happen while a hold or a waiter was admitted under a smaller one. The
-- first call that finds no size stores its own (see resource). One script
-- sends one command at most for a lease no longer than one it kept.
local function keepSize(r, now, leaseMs)
  if not r.sizeKey or leaseMs <= (r.keptMs or 0) then
    return
  end
  r.keptMs = leaseMs
  local untilMs = now + 2 * leaseMs
  if r.storeSize then
    r.storeSize = false
    redis.call('set', r.sizeKey, r.size, 'pxat', untilMs)
  else
    redis.call('pexpireat', r.sizeKey, untilMs, 'gt')
  end
end

-- settle records that the holds use used, after a script changed them,
-- with the holds' fields and values listed in holds (nil for none; see
-- commitGrants) written in the same call: the hash and the zset expire at
-- the latest deadline, or, with no hold left, the hash goes. It stores the
-- last hold ID issued (keepHoldIDs).
local function settle(r, used, holds)
  keepHoldIDs(r)
  local last = redis.call('zrange', r.leases, '-1', '-1', 'withscores')
  if #last == 0 then
    redis.call('del', r.hash)
    return
  end
  redis.call('hset', r.hash, 'used', used, unpack(holds or {}))
  redis.call('pexpireat', r.hash, last[2])
  redis.call('pexpireat', r.leases, last[2])
end

-- extend makes field's lease last leaseMs (a number) from now (server ms)
-- unless it already lasts longer: a lease is never shortened. The hash and
-- the zset already expire (see settle), so raising their expiry is enough;
-- a semaphore's size is kept past it (keepSize). r needs only hash, leases
-- and sizeKey.
local function extend(r, field, now, leaseMs)
  local deadline = now + leaseMs
  redis.call('zadd', r.leases, 'gt', deadline, field)
  redis.call('pexpireat', r.hash, deadline, 'gt')
  redis.call('pexpireat', r.leases, deadline, 'gt')
  keepSize(r, now, leaseMs)
end

-- earliestMs is how long until the first hold's deadline, in ms, from now:
-- when a waiter should look again, since the holds may change then without
-- a message. -1 when nobody holds the resource. It reads the deadline
-- purge kept, if the leases have not changed since.
local function earliestMs(r, now)
  local first = r.first
  if first == nil then
    local z = redis.call('zrange', r.leases, '0', '0', 'withscores')
    first = #z > 0 and tonumber(z[2])
  end
  if not first then
    return -1
  end
  return math.max(first - now, 0)
end
