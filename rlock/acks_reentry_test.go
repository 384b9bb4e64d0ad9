package rlock

import (
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
func TestReplicaAcksReentryGivenBackAcrossAFailover(t *testing.T) {
	ctx := testCtx(t)
	s := redistest.StartSentinel(t, redistest.WithLaggingReplica())
	a, err := New(s.FailoverClient(), WithWatchdogLease(failoverLease), WithReplicaAcks(1, 2*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	outer, err := a.Lock(ctx, "reentered")
	require.NoError(t, err, "acknowledged by the replica")

	s.Relay.Hold()
	reentered := make(chan error, 1)
	go func() {
		_, err := a.Lock(outer.Context(), "reentered")
		reentered <- err
	}()
	onMaster := newClient(t, s.Master, WithReplicaAcks(0, 0))
	require.Eventually(t, func() bool {
		st, err := onMaster.Inspect(ctx, "reentered")
		return err == nil && st.Holders[outer.Owner()] == 2
	}, fast, time.Millisecond, "the re-entry reached the master")
	s.Master.Stop()
	s.Relay.Drop()
	s.Failover()
	require.ErrorIs(t, withinBy(t, reentered, time.Now().Add(10*time.Second), "the re-entry did not return"), ErrNotObtained)

	b, err := New(s.FailoverClient(), WithReplicaAcks(0, 0))
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
	require.Equal(t, map[string]int64{outer.Owner(): 1}, st.Holders, "the outer hold's count on the promoted replica")
}
