package rlock

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// resendClient is a proxiedClient with go-redis resending a command whose
// reply is lost (a read timeout, then a retry on a new connection): a
// script the proxy drops the reply of runs twice on the server.
func resendClient(ctx context.Context, t *testing.T, srv *redistest.Server, opts ...Option) (*Client, *proxy) {
	t.Helper()
	return proxiedClient(ctx, t, srv, 300*time.Millisecond, 2, opts...)
}

// proxiedClient is a Client whose connection goes through a proxy, with
// go-redis's read timeout and retries as given. Its scripts (the
// watchdog's too) are loaded first, so a lost reply is a script's result
// and not a NOSCRIPT.
func proxiedClient(ctx context.Context, t *testing.T, srv *redistest.Server, read time.Duration, retries int, opts ...Option) (*Client, *proxy) {
	t.Helper()
	px := startProxy(t, srv.Addr)
	c, err := New(px.client(t, func(o *redis.Options) { o.ReadTimeout, o.MaxRetries = read, retries }), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	rw := c.RWLock("warm")
	w, err := rw.Lock(ctx)
	require.NoError(t, err)
	r, err := rw.RLock(w.Context())
	require.NoError(t, err)
	// The watchdog's renewal script too: a first renewal would otherwise
	// pay a NOSCRIPT round trip on top of a dropped reply's read timeout,
	// which a loaded machine pushed past a 1 s lease.
	_, err = rw.write.renew(ctx, w.Owner(), w.Token(), time.Minute)
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
		require.EqualValues(t, 1, forced)
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

// Every script of the RW lock, resent by go-redis after its first run took
// effect, replays rather than acting twice: a re-entry counts once, a
// release leaves one count, a cancelled waiter's leave takes it out once
// and frees nothing of another's, a renewal keeps the one hold it renews.
func TestRWScriptsResentByGoRedis(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	c, px := resendClient(ctx, t, srv, WithWatchdogLease(time.Second))
	other := newClient(t, srv)
	rw := c.RWLock("resent")
	dropped := int64(0)
	drop := func(script string) {
		t.Helper()
		dropped++
		px.DropNextReply(isScript(script), false)
	}
	readers := func() map[string]int64 {
		t.Helper()
		st, err := rw.Inspect(ctx)
		require.NoError(t, err)
		return st.Readers
	}

	drop("rw-acquire") // a write, then a read inside it: each counts once
	w, err := rw.Lock(ctx)
	require.NoError(t, err)
	fence, err := rdb.Get(ctx, rwKey("resent")+":fence").Uint64()
	require.NoError(t, err)
	require.Equal(t, w.Token(), fence, "the resent acquire drew a second token")
	r1, err := rw.RLock(w.Context())
	require.NoError(t, err)
	drop("rw-acquire")
	r2, err := rw.RLock(r1.Context())
	require.NoError(t, err)
	require.Equal(t, map[string]int64{w.Owner(): 2}, readers(), "the resent re-entry counted twice")

	drop("renew-2") // the watchdog's renewal of the write and the read, one call
	require.Eventually(t, func() bool { return px.Dropped() == dropped }, fast, 5*time.Millisecond)
	time.Sleep(time.Second) // past the lease: the renewals that followed kept both
	require.NoError(t, w.Context().Err())

	waiting := rlockInBackground(ctx, other.RWLock("resent"), true)
	waitForRWQueued(t, srv, "resent", 1)
	drop("rw-release")
	require.NoError(t, r2.Unlock(ctx))
	require.Equal(t, map[string]int64{w.Owner(): 1}, readers(), "the resent release left two counts")
	drop("rw-release")
	require.NoError(t, w.Unlock(ctx)) // the downgrade: the read holds on
	require.Equal(t, map[string]int64{w.Owner(): 1}, readers())

	lctx, cancel := context.WithCancel(ctx) // a read queued behind the write, cancelled
	gave := rlockInBackground(lctx, c.RWLock("resent"), false)
	waitForRWQueued(t, srv, "resent", 2)
	drop("rw-leave")
	cancel()
	require.ErrorIs(t, (<-gave).err, context.Canceled)
	require.Eventually(t, func() bool { return px.Dropped() == dropped }, fast, 5*time.Millisecond)
	waitForRWQueued(t, srv, "resent", 1)

	require.NoError(t, r1.Unlock(ctx))
	l := receive(t, waiting)
	st, err := rw.Inspect(ctx)
	require.NoError(t, err)
	require.Equal(t, l.Owner(), st.Writer)
	require.Empty(t, st.Readers)
	require.NoError(t, l.Unlock(ctx))
	require.Equal(t, dropped, px.Dropped(), "every dropped reply was a resent script's")
	requireOnlyFence(t, rdb, "resent")
}
