-- Library (see script.go): taking a free lock, shared by acquire.lua
-- and acquire_set.lua. It runs before acquire.lua's free path, so it is
-- written as acquire.lua would write it inline: one function, its locals
-- passed as arguments.

-- takeFree makes owner the holder of the free lock, with a new token, and
-- remembers the request (an owner made for this call needs no record: a
-- hold it has can only be this call's own). It returns acquire's reply.
-- It takes the calling script's locals as arguments: as upvalues they
-- would cost acquire.lua's free path more server time.
local function takeFree(hash, fence, owner, leaseMs, newOwner, req, requestMs)
  local given = takeToken(fence, leaseMs)
  redis.call('hset', hash, owner, '1')
  redis.call('pexpire', hash, leaseMs)
  if not newOwner then
    redis.call('set', req, '1:' .. formatToken(given), 'px', requestMs)
  end
  return {1, 1, given}
end

