package rlock

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// resendClient is a Client whose connection goes through a proxy, with
// go-redis resending a command whose reply is lost (a read timeout, then
// a retry on a new connection): a script the proxy drops the reply of runs
// twice on the server. Its scripts are loaded first, so the lost reply is
// a script's result and not a NOSCRIPT.
func resendClient(ctx context.Context, t *testing.T, srv *redistest.Server, opts ...Option) (*Client, *proxy) {
	t.Helper()
	px := startProxy(t, srv.Addr)
	c, err := New(px.client(t, func(o *redis.Options) { o.ReadTimeout, o.MaxRetries = 300*time.Millisecond, 2 }), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	rw := c.RWLock("warm")
	w, err := rw.Lock(ctx)
	require.NoError(t, err)
	r, err := rw.RLock(w.Context())
	require.NoError(t, err)
	require.NoError(t, w.Unlock(ctx))
	require.NoError(t, r.Unlock(ctx))
	_, err = rw.ForceUnlock(ctx)
	require.NoError(t, err)
	_, err = c.ForceUnlock(ctx, "warm")
	require.NoError(t, err)
	return c, px
}

// A force release resent after its first run granted the next waiter must
// replay, not end that waiter's hold: one ForceUnlock ends the holds it
// found, and the waiter it granted keeps its grant, for the plain lock and
// the RW lock alike.
func TestForceUnlockResentByGoRedis(t *testing.T) {
	t.Run("lock", func(t *testing.T) {
		ctx, srv := serve(t)
		c, px := resendClient(ctx, t, srv)
		holder, waiter := newClient(t, srv), newClient(t, srv)
		h, err := holder.Lock(ctx, "force", WithLease(longLease))
		require.NoError(t, err)
		got := lockInBackground(ctx, waiter, "force")
		waitForQueued(t, srv, "force", 1)
		px.DropNextReply(isScript("force-release"), false)
		forced, err := c.ForceUnlock(ctx, "force")
		require.NoError(t, err)
		require.True(t, forced)
		require.EqualValues(t, 1, px.Dropped(), "the force release's reply was lost and resent")
		l := receive(t, got)
		st, err := holder.Inspect(ctx, "force")
		require.NoError(t, err)
		require.Equal(t, map[string]int64{l.Owner(): 1}, st.Holders, "the resend ended the waiter's grant")
		require.NoError(t, l.Unlock(ctx))
		require.ErrorIs(t, h.Unlock(ctx), ErrLockLost)
		require.Zero(t, admin(t, srv).Exists(ctx, lockKey("force")).Val())
	})
	t.Run("rw", func(t *testing.T) {
		ctx, srv := serve(t)
		c, px := resendClient(ctx, t, srv)
		holder, waiter := newClient(t, srv), newClient(t, srv)
		w, err := holder.RWLock("force").Lock(ctx, WithLease(longLease))
		require.NoError(t, err)
		got := rlockInBackground(ctx, waiter.RWLock("force"), true)
		waitForRWQueued(t, srv, "force", 1)
		px.DropNextReply(isScript("rw-force-release"), false)
		n, err := c.RWLock("force").ForceUnlock(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 1, n, "one hold ended")
		require.EqualValues(t, 1, px.Dropped(), "the force release's reply was lost and resent")
		l := receive(t, got)
		st, err := holder.RWLock("force").Inspect(ctx)
		require.NoError(t, err)
		require.Equal(t, l.Owner(), st.Writer, "the resend ended the waiter's grant")
		require.NoError(t, l.Unlock(ctx))
		require.ErrorIs(t, w.Unlock(ctx), ErrLockLost)
		requireOnlyFence(t, admin(t, srv), "force")
	})
}
