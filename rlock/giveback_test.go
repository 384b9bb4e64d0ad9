package rlock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// An RLock's acquire is delayed in the network past the call's read
// timeout, and the network stays down for longer than a clean-up's single
// try (and than undoTimeout): the failed call's give-back must keep
// trying, so that once the delayed acquire arrives and takes a read hold,
// the hold is given back as soon as Redis is reachable, far within its
// 30 s lease, and a writer gets in.
func TestRWCleanupOutlivesAnOutage(t *testing.T) {
	ctx, srv := serve(t)
	c, px := proxiedClient(ctx, t, srv, 200*time.Millisecond, -1)
	writer := newClient(t, srv).RWLock("outage")
	px.Blackhole()
	_, err := c.RWLock("outage").RLock(ctx)
	require.Error(t, err, "the acquire's reply cannot come")
	time.Sleep(undoTimeout + 500*time.Millisecond)
	px.Restore() // the delayed acquire takes the read now
	w, err := writer.TryLock(ctx, WaitAtMost(fast))
	require.NoError(t, err, "the read hold the failed RLock took was not given back within %v", fast)
	require.NoError(t, w.Unlock(ctx))
	requireOnlyFence(t, admin(t, srv), "outage")
}

// Close does not wait out a clean-up that Redis never answers: it gives
// the clean-ups its own bound, then cancels them, and their goroutines end
// (goleak checks at the end of the package's tests).
func TestCloseCancelsACleanupRedisNeverAnswers(t *testing.T) {
	ctx, srv := serve(t)
	c, px := proxiedClient(ctx, t, srv, 200*time.Millisecond, -1)
	px.Blackhole()
	_, err := c.RWLock("never").RLock(ctx)
	require.Error(t, err, "the acquire's reply cannot come")
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	select {
	case <-closed:
	case <-time.After(closeTimeout + fast):
		t.Fatal("Close waited for a clean-up past its bound")
	}
}
