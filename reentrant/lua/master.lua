-- Library (see script.go): the server's role. A replica that takes writes
-- (replica-read-only no), such as a master demoted by hand whose clients
-- stay connected, runs every script, and no write probe tells it from the
-- master: a hold taken, renewed or granted there would be a second holder
-- beside the master's. So every script that takes or renews a hold, and
-- every grant before it publishes (writeProbe), asks the role first. INFO
-- replication is how a script can: ROLE is refused in scripts.

-- isMaster is requireMaster's answer, asked once per script run: each run
-- is a fresh call of the script's body.
local isMaster = false

-- requireMaster fails the script unless the server is a master, before
-- anything is written or published. The error starts with READONLY, as a
-- read-only replica's own, so that go-redis drops the connection (a
-- Sentinel client then asks for the master again) and retries. A server
-- with no replication section in its INFO (miniredis, which the bench
-- embeds) has no replicas: it is a master.
local function requireMaster()
  if isMaster then
    return
  end
  local info = redis.pcall('info', 'replication')
  if type(info) == 'table' then
    if not string.find(info.err, 'not supported', 1, true) then
      error(info)
    end
  elseif not string.find(info, '\nrole:master\r', 1, true) then
    error({err = 'READONLY baton: this server is a replica, not the master'})
  end
  isMaster = true
end
