-- Library (see script.go): publishing a grant, shared by the plain lock's
-- grant and the shared resources' (shared_grant.lua):
--   - a waiter is live when its grant message was received (PUBLISH and
--     SPUBLISH count receivers), or, with 'publish-alive', when its
--     liveness key exists: then every grant published is kept;
--   - nothing is published where the writes would be refused (a replica,
--     such as a demoted master a client still reaches after a failover, or
--     a master short of min-replicas-to-write): a waiter listening there
--     would believe in a grant never made. Before its first message a
--     script runs writeProbe, which Redis refuses there as any write, and
--     which refuses a replica that takes writes (requireMaster).

-- writeProbe is a write that changes nothing: GETEX without options reads
-- the fencing counter (always a string) and touches neither value nor TTL,
-- but is flagged as a write, and Redis judges a script's commands by their
-- flags (READONLY on a replica, NOREPLICAS, MISCONF) before running them.
-- It is not flagged deny-oom, so a full server still lets a lock go. It
-- returns the counter's value (false when it is missing), for a caller
-- that needs it.
local function writeProbe(fence)
  requireMaster()
  return redis.call('getex', fence)
end

-- deliver publishes a grant message msg on channel, with publish
-- ('publish', 'spublish' or 'publish-alive'), and reports whether its
-- waiter counts as live: received, or, with 'publish-alive', its liveness
-- key alive (nil for none) exists, and only then is msg published.
local function deliver(publish, channel, alive, msg)
  if publish ~= 'publish-alive' then
    return redis.call(publish, channel, msg) > 0
  end
  if not (alive and redis.call('pttl', alive) ~= -2) then
    return false
  end
  redis.call('publish', channel, msg)
  return true
end
