package rlock

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/batonlock/baton/bench/redistest"
)

// No test may leave a goroutine behind: waiters, hubs and watchdogs all stop.
// In ACL mode the servers' least-privilege user has exactly ACLRules.
func TestMain(m *testing.M) {
	redistest.RequireInstalled()
	redistest.UseACLRules(ACLRules)
	goleak.VerifyTestMain(m, failoverClusterClientLeak...)
}

// failoverClusterClientLeak is what go-redis leaves behind when a
// redis.NewFailoverClusterClient is closed: its subscription to the
// sentinel's +switch-master stays open (go-redis issue #3999). baton never
// calls PubSub.Channel, so the channel goroutines are that subscription's.
var failoverClusterClientLeak = []goleak.Option{
	goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9.(*sentinelFailover).listen"),
	goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9.(*channel).initMsgChan.func1"),
	goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9.(*channel).initHealthCheck.func1"),
}
