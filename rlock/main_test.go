package rlock

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
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

// testCtx bounds a whole test.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newClient returns a Client on its own Redis connection pool, closed at the
// end of the test, like a separate process would have.
func newClient(t *testing.T, srv *redistest.Server, opts ...Option) *Client {
	t.Helper()
	c, err := New(srv.Client(), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// admin is the test's own unrestricted connection, for checks and fault
// injection; under redistest.ACLEnv the clients under test are restricted.
func admin(t *testing.T, srv *redistest.Server) *redis.Client {
	t.Helper()
	return srv.Admin()
}

// lockKey is the hash key of a lock under the default prefix.
func lockKey(name string) string { return "baton:{" + name + "}" }
