-- Read acquire of a reader-preferring RW lock in Redisson's RReadWriteLock
-- format, written for the bench from that documented format. The lock is a
-- hash: field 'mode' ('read' or 'write'), one field per holder with its
-- re-entry count. Every read hold also has a timeout key of its own,
-- <base>:<reader>:rwlock_timeout:<n>, living for the lease, and the hash
-- lives as long as the longest of them.
-- Reader-preferring: a read is granted whenever the mode is read, even with
-- writers waiting; under a write, only to that writer (a read inside it).
-- KEYS[1] lock hash, KEYS[2] base of the timeout keys.
-- ARGV[1] lease ms, ARGV[2] reader field, ARGV[3] the same owner's write field.
-- Returns nil when granted, else the lock's PTTL: how long to wait at most.
local lock, base = KEYS[1], KEYS[2]
local lease, reader, writer = tonumber(ARGV[1]), ARGV[2], ARGV[3]

local mode = redis.call('hget', lock, 'mode')
local insideOwnWrite = mode == 'write' and redis.call('hexists', lock, writer) == 1
if mode and mode ~= 'read' and not insideOwnWrite then
  return redis.call('pttl', lock)
end
if not mode then
  redis.call('hset', lock, 'mode', 'read')
end
local n = redis.call('hincrby', lock, reader, 1)
redis.call('set', base .. ':' .. reader .. ':rwlock_timeout:' .. n, 1, 'px', lease)
redis.call('pexpire', lock, math.max(redis.call('pttl', lock), lease))
return false
