package rlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// requireStillHeld requires that another client cannot take name while
// live, a hold's Context, is alive.
func requireStillHeld(ctx context.Context, t *testing.T, other *Client, name string, live context.Context) {
	t.Helper()
	require.NoError(t, live.Err(), "the hold's Context")
	l, err := other.TryLock(ctx, name)
	if err == nil {
		_ = l.Unlock(ctx)
	}
	require.ErrorIs(t, err, ErrNotObtained, "two holders: the other client took the lock")
	require.NoError(t, live.Err(), "the hold's Context")
}

// A re-entry with a shorter lease never shortens the lock: the outer hold,
// renewed by the watchdog, still excludes another client long after the
// inner lease.
func TestWireShorterReentryKeepsTheLease(t *testing.T) {
	ctx, srv := serve(t)
	c := newWireClient(t, srv, "go-1")
	other := newWireClient(t, srv, "go-2")
	outer, err := c.Lock(ctx, "n")
	require.NoError(t, err)
	inner, err := c.Lock(outer.Context(), "n", WithLease(200*time.Millisecond))
	require.NoError(t, err)
	time.Sleep(500 * time.Millisecond)
	requireStillHeld(ctx, t, other, "n", outer.Context())
	_ = inner.Unlock(ctx)
	require.NoError(t, outer.Unlock(ctx))
}

// A partial unlock never shortens the lease the other handles were
// granted: after the watchdog's handle unlocks (and renewal stops), the
// 5 s handle still excludes another client.
func TestWirePartialUnlockKeepsTheLongerLease(t *testing.T) {
	ctx, srv := serve(t)
	c := newWireClient(t, srv, "go-1", WithWatchdogLease(600*time.Millisecond))
	other := newWireClient(t, srv, "go-2")
	job := WithOwner(ctx, "job")
	watched, err := c.Lock(job, "n")
	require.NoError(t, err)
	fixed, err := c.Lock(job, "n", WithLease(5*time.Second))
	require.NoError(t, err)
	require.NoError(t, watched.Unlock(ctx))
	time.Sleep(1200 * time.Millisecond)
	requireStillHeld(ctx, t, other, "n", fixed.Context())
	require.NoError(t, fixed.Unlock(ctx))
}

// The watchdog's renewal never shortens a longer lease of the same hold:
// while a 600 ms watchdog renews, a 5 s handle's lease stands after the
// watchdog's handle has gone.
func TestWireRenewalKeepsTheLongerLease(t *testing.T) {
	ctx, srv := serve(t)
	adm := admin(t, srv)
	c := newWireClient(t, srv, "go-1", WithWatchdogLease(600*time.Millisecond))
	job := WithOwner(ctx, "job")
	watched, err := c.Lock(job, "n")
	require.NoError(t, err)
	fixed, err := c.Lock(job, "n", WithLease(5*time.Second))
	require.NoError(t, err)
	time.Sleep(500 * time.Millisecond) // the watchdog has renewed, every 200 ms
	require.Greater(t, adm.PTTL(ctx, "n").Val(), 4*time.Second, "the renewal cut the 5 s lease")
	require.NoError(t, watched.Unlock(ctx))
	require.NoError(t, fixed.Unlock(ctx))
}

// A stale handle of owner "57", whose lease ran out, sends no release: the
// same owner's next hold stands, and another client stays out.
func TestWireStaleUnlockSparesTheOwnersNextHold(t *testing.T) {
	ctx, srv := serve(t)
	adm := admin(t, srv)
	c := newWireClient(t, srv, "go-1")
	other := newWireClient(t, srv, "go-2")
	o := WithOwner(ctx, "57")
	stale, err := c.Lock(o, "n", WithLease(200*time.Millisecond))
	require.NoError(t, err)
	<-stale.Context().Done()
	require.Eventually(t, func() bool { return adm.Exists(ctx, "n").Val() == 0 }, 5*time.Second, 5*time.Millisecond)
	next, err := c.Lock(o, "n")
	require.NoError(t, err)
	require.ErrorIs(t, stale.Unlock(ctx), ErrLockLost)
	requireStillHeld(ctx, t, other, "n", next.Context())
	require.NoError(t, next.Unlock(ctx))
}
