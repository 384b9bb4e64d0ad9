-- Library (see script.go): leaving one hold of a lock, shared by
-- release.lua and release_set.lua. It runs before release.lua's grant
-- library, so it is written as release.lua would write it inline: one
-- function, its locals passed as arguments (see takeFree).

-- releaseHold leaves one of owner's holds of the lock whose fencing
-- counter reads held, if owner holds it under token (the token tells
-- holds apart: a release meant for a hold that expired must not release
-- the same owner's next hold). It returns the owner's remaining hold
-- count, 0 when it left the last hold of a lock nobody waits for (the
-- lock is then free: nothing is published), -1 when owner does not hold
-- the lock under token, or nil when it is the last hold and the queue has
-- entries, or, given the wake records (wake), they have: the caller hands
-- the lock on (passOn), which replaces the hold or wakes a waiter.
local function releaseHold(hash, queue, granted, owner, token, held, wake)
  local count = tonumber(redis.call('hget', hash, owner))
  if not count or held ~= token then
    return -1
  end
  if count > 1 then
    -- The lease is left as it is: the remaining holds were promised at
    -- least what the longest of them asked for, and re-entry never
    -- shortens.
    return redis.call('hincrby', hash, owner, -1)
  end
  if redis.call('exists', queue, wake or queue) == 0 then
    -- The granted key goes with the hold whose grant it names (a grant a
    -- message made a hold, which no look claimed).
    redis.call('del', hash, granted)
    return 0
  end
  return nil
end
