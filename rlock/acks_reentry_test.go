package rlock

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// A re-entry whose acknowledgement fails because the master dies (the
// relay held the re-entry from the replica) is given back, retried until
// Redis answers: on the promoted replica, which never had the re-entry.
// There the give-back must leave the outer hold's count alone (before, it
// released one count of the outer hold, whose count there was 1: the lock
// was free while its holder's Context lived, and B took it).
// In both formats (in Redisson's, a re-entry's latch, which replays it, is
// otherwise dropped as soon as its reply is in), and for a re-entry
// through the outer hold's Context and by its given owner (WithOwner).
func TestReplicaAcksReentryGivenBackAcrossAFailover(t *testing.T) {
	for _, format := range []struct {
		name string
		opts []Option
	}{{"baton", nil}, {"wire", []Option{WithRedissonWire("")}}} {
		for _, byOwner := range []bool{false, true} {
			t.Run(format.name+map[bool]string{false: "/context", true: "/owner"}[byOwner], func(t *testing.T) {
				testReentryGivenBackAcrossAFailover(t, byOwner, format.opts...)
			})
		}
	}
}

// testReentryGivenBackAcrossAFailover is the failover test above, with
// every client made with opts; byOwner: the outer hold and the re-entry
// are WithOwner's.
func testReentryGivenBackAcrossAFailover(t *testing.T, byOwner bool, opts ...Option) {
	ctx := testCtx(t)
	outerCtx := ctx
	if byOwner {
		outerCtx = WithOwner(ctx, "X")
	}
	s := redistest.StartSentinel(t, redistest.WithLaggingReplica())
	a, err := New(s.FailoverClient(), append([]Option{WithWatchdogLease(failoverLease), WithReplicaAcks(1, 2*time.Second)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	outer, err := a.Lock(outerCtx, "reentered")
	require.NoError(t, err, "acknowledged by the replica")

	s.Relay.Hold()
	reentered := make(chan error, 1)
	go func() {
		reCtx := outer.Context()
		if byOwner {
			reCtx = outerCtx
		}
		_, err := a.Lock(reCtx, "reentered")
		reentered <- err
	}()
	onMaster := newClient(t, s.Master, append([]Option{WithReplicaAcks(0, 0)}, opts...)...)
	require.Eventually(t, func() bool {
		st, err := onMaster.Inspect(ctx, "reentered")
		return err == nil && heldBy(st, outer.Owner()) == 2
	}, fast, time.Millisecond, "the re-entry reached the master")
	s.Master.Stop()
	s.Relay.Drop()
	s.Failover()
	require.ErrorIs(t, withinBy(t, reentered, time.Now().Add(10*time.Second), "the re-entry did not return"), ErrNotObtained)

	b, err := New(s.FailoverClient(), append([]Option{WithReplicaAcks(0, 0)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	// The give-back retries every maxRetryPause at most: it has landed on
	// the promoted replica well within the window.
	require.Never(t, func() bool {
		l, err := b.TryLock(ctx, "reentered")
		return err == nil && l != nil
	}, time.Second, 20*time.Millisecond, "B got the lock while A's outer hold lived")
	require.NoError(t, outer.Context().Err(), "A's outer hold")
	st, err := b.Inspect(ctx, "reentered")
	require.NoError(t, err)
	require.Len(t, st.Holders, 1, "the holders on the promoted replica")
	require.EqualValues(t, 1, heldBy(st, outer.Owner()), "the outer hold's count on the promoted replica")
}

// heldBy is owner's hold count in st: under owner in baton's format, under
// "<client ID>:<owner>" in Redisson's.
func heldBy(st State, owner string) int64 {
	for f, n := range st.Holders {
		if f == owner || strings.HasSuffix(f, ":"+owner) {
			return n
		}
	}
	return 0
}
