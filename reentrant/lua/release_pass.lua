-- The rest of release.lua, run after the grant library: the last hold is
-- left and the queue has entries (see release.lua, whose locals this part
-- reads). The grant replaces this hold; with no live waiter the lock is
-- free. No PUBLISH when nobody waits: the grant publishes only to a waiter.

if passOn(hash, fence, queue, granted, publish, seen[2]) then
  -- Remembered as it is: a resent release asks for the pass again, which
  -- grants nothing twice (pass.lua runs only on a free lock).
  return rememberCount(-2)
end
return rememberCount(0)
