package reentrant

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/grant.lua
	grantLua string
	//go:embed lua/acquire.lua
	acquireLua string
	//go:embed lua/leave.lua
	leaveLua string
	//go:embed lua/release.lua
	releaseLua string
	//go:embed lua/renew.lua
	renewLua string
	//go:embed lua/force_release.lua
	forceReleaseLua string
	//go:embed lua/pass.lua
	passLua string
	//go:embed lua/inspect.lua
	inspectLua string

	// Scripts run by EVALSHA; redis.Script falls back to EVAL on NOSCRIPT.
	// Those that can leave a lock free start with the baton pass.
	acquireScript      = redis.NewScript(grantLua + acquireLua)
	releaseScript      = redis.NewScript(grantLua + releaseLua)
	forceReleaseScript = redis.NewScript(grantLua + forceReleaseLua)
	leaveScript        = redis.NewScript(grantLua + leaveLua)
	passScript         = redis.NewScript(grantLua + passLua)
	renewScript        = redis.NewScript(renewLua)
	inspectScript      = redis.NewScript(inspectLua)
)
