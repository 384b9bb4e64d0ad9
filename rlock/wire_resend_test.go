package rlock

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// proxiedWireClient is a wire-mode Client (as the unrestricted user, see
// newWireClient) whose connection goes through a proxy, with go-redis's
// read timeout and retries as given, and its scripts loaded. A call's
// ctx bounds its reads too.
func proxiedWireClient(ctx context.Context, t *testing.T, srv *redistest.Server, read time.Duration, retries int) (*Client, *proxy) {
	t.Helper()
	px := startProxy(t, srv.Addr)
	c, err := New(px.client(t, func(o *redis.Options) {
		o.ReadTimeout, o.MaxRetries, o.ContextTimeoutEnabled = read, retries, true
		o.Username, o.Password = "", ""
	}), WithRedissonWire("go-1"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	warm, err := c.Lock(ctx, "warm")
	require.NoError(t, err)
	require.NoError(t, warm.Unlock(ctx))
	c.background.running.Wait() // the latch's DEL: no call of the test's waits behind it
	return c, px
}

// isWireAcquire matches an EVALSHA or EVAL of the wire-mode acquire
// script: the only one of the format's scripts with fewer than 3 keys
// whose field argument is a hold's (the renewal has no time to run).
func isWireAcquire(cmd []string) bool {
	return (cmd[0] == "evalsha" || cmd[0] == "eval") && len(cmd) > 2 && (cmd[2] == "1" || cmd[2] == "2")
}

// A first acquire under WithOwner whose reply is lost, and which go-redis
// resends, counts once: one Unlock frees the lock.
func TestWireFirstAcquireResentByGoRedis(t *testing.T) {
	ctx, srv := serve(t)
	adm := admin(t, srv)
	c, px := proxiedWireClient(ctx, t, srv, 300*time.Millisecond, 2)
	px.DropNextReply(isWireAcquire, false)
	l, err := c.Lock(WithOwner(ctx, "job"), "n")
	require.NoError(t, err)
	require.EqualValues(t, 1, px.Dropped(), "the acquire's reply was lost and resent")
	require.Equal(t, "1", adm.HGet(ctx, "n", "go-1:job").Val(), "the resend counted again")
	require.NoError(t, l.Unlock(ctx))
	require.Zero(t, adm.Exists(ctx, "n").Val(), "a count is left with no hold")
}

// A first acquire under WithOwner whose caller gave up before its reply
// is undone in the background by a replay that tells whether it took the
// lock, and gives that count back: nothing is left until the lease ends.
func TestWireFirstAcquireUndone(t *testing.T) {
	ctx, srv := serve(t)
	adm := admin(t, srv)
	c, px := proxiedWireClient(ctx, t, srv, 10*time.Second, 0)
	px.HoldReplies()
	gave, cancel := context.WithTimeout(WithOwner(ctx, "job"), 300*time.Millisecond)
	defer cancel()
	_, err := c.Lock(gave, "n")
	require.ErrorIs(t, err, ErrNotObtained)
	require.Eventually(t, func() bool { return adm.Exists(ctx, "n").Val() == 1 }, 5*time.Second, time.Millisecond)
	px.ReleaseReplies()
	require.Eventually(t, func() bool { return adm.Exists(ctx, "n").Val() == 0 }, fast, 5*time.Millisecond,
		"the undo left a count with no hold")
}
