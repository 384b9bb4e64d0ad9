-- The rest of release.lua, run after the grant library: the last hold is
-- left and the queue has entries (see release.lua, whose locals this part
-- reads). The grant replaces this hold; with no live waiter the lock is
-- free. No PUBLISH when nobody waits: the grant publishes only to a waiter.

-- A reply of -2 is remembered as it is: a resent release asks for the pass
-- again, which grants nothing twice (pass.lua runs only on a free lock).
local reply = passOn(hash, fence, queue, granted, publish, seen[2], wake) and '-2' or '0'
redis.call('set', req, reply, 'px', requestMs)
return tonumber(reply)
