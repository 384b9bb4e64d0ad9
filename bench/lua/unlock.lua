-- Compare-and-delete: the release of the published single-instance recipe.
-- Deleting only when the key still holds this holder's token keeps a holder
-- whose lease ran out from deleting the next holder's lock.
-- KEYS[1] lock key, ARGV[1] token. Returns 1 when released, 0 when not held.
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
