-- Library (see script.go): the renewal of a hold of a shared
-- resource (see shared.lua).

-- renewShare extends the lease of owner's hold in mode of the resource r
-- (its hash, leases and, for a semaphore, sizeKey), but only while owner
-- still holds so under hold ID id and the lease has not run out by the
-- server clock, now (ms): a renewal can never resurrect a hold, nor extend
-- a later hold of the same owner. leaseMs is the lease in ms, a number. It
-- returns 1 when the hold has at least leaseMs left, 0 when owner does not
-- hold in mode under id.
local function renewShare(r, owner, id, mode, leaseMs, now)
  local field = holdField(mode, owner)
  local held = parseHold(redis.call('hget', r.hash, field))
  if not held or held.hid ~= id then
    return 0
  end
  local deadline = redis.call('zscore', r.leases, field)
  if not deadline or tonumber(deadline) <= now then
    return 0
  end
  -- Never shorten: a nested hold's fixed lease may reach further.
  extend(r, field, now, leaseMs)
  return 1
end
