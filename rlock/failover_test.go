package rlock

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// laggingFailover is what happened in lockAcrossLaggingFailover.
type laggingFailover struct {
	// Sentinel is the deployment after the failover: Master is the promoted
	// replica, Replica the killed master, Relay the relay between them.
	Sentinel *redistest.Sentinel
	// A and B are the first and second client's holds, nil where their
	// call failed with AErr or BErr.
	A, B       *Lock
	AErr, BErr error
	// TwoHolders: B was granted the lock while A, granted before it, had
	// not been told it lost it (A's Context was alive).
	TwoHolders bool
	// Failover is the time from the master's SIGKILL to the promoted
	// replica taking the master role.
	Failover time.Duration
}

// failoverLease is the watchdog lease of both clients: A's first renewal
// comes a third of it after A's grant, later than the two Sentinel waits
// Failover allows (10s each), so the renewal that would find A's hold gone
// cannot end A's Context before B is granted. Whether A's Context is alive
// then is the client's own word that it holds, not a race against it.
const failoverLease = 90 * time.Second

// replicaLag is how a lockAcrossFailover replica lags behind A's grant.
type replicaLag int

const (
	// noLag: the relay forwards the stream as it comes.
	noLag replicaLag = iota
	// lostLag: the relay holds the stream from before A's Lock until the
	// master dies, and loses it then.
	lostLag
	// catchUpLag: the relay holds the stream from before A's Lock, and
	// forwards what it held once the master has a client waiting in WAIT
	// (an acknowledgement asked for): a replica that lags, but catches up
	// within the acknowledgement timeout. Without acknowledgements no
	// client waits, and the relay still holds when the master dies.
	catchUpLag
)

// lockAcrossLaggingFailover runs issue 31's hazard against two clients
// made with opts, each on its own failover client: a Sentinel deployment
// whose replica lags behind a relay that holds the replication stream;
// client A locks (its grant reaches the master only); the master is
// SIGKILLed, the relay drops what it held, the sentinel promotes the
// replica; a new client B, as another process would, tries the same lock
// on the promoted replica. It reports what each was told. The holds are
// left to the caller (the clients close at test end).
func lockAcrossLaggingFailover(t *testing.T, name string, opts ...Option) laggingFailover {
	t.Helper()
	return lockAcrossFailover(t, name, lostLag, opts...)
}

// lockAcrossFailover is lockAcrossLaggingFailover, with the replica
// lagging as lag says.
func lockAcrossFailover(t *testing.T, name string, lag replicaLag, opts ...Option) laggingFailover {
	t.Helper()
	ctx := testCtx(t)
	s := redistest.StartSentinel(t, redistest.WithLaggingReplica())
	opts = append([]Option{WithWatchdogLease(failoverLease)}, opts...)
	clientOn := func() *Client {
		c, err := New(s.FailoverClient(), opts...)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	a := clientOn()
	r := laggingFailover{Sentinel: s}

	if lag != noLag {
		s.Relay.Hold()
	}
	if lag == catchUpLag {
		stop := releaseOnWait(ctx, t, s)
		defer stop()
	}
	r.A, r.AErr = a.Lock(ctx, name)
	killed := time.Now()
	s.Master.Stop()
	s.Relay.Drop()
	s.Failover()
	r.Failover = time.Since(killed)

	r.B, r.BErr = clientOn().TryLock(ctx, name)
	r.TwoHolders = r.AErr == nil && r.BErr == nil && r.A.Context().Err() == nil
	return r
}

// releaseOnWait has s's relay forward what it holds once s's master has a
// client blocked in WAIT, polling INFO until then; stop ends the polling
// and returns when it has ended.
func releaseOnWait(ctx context.Context, t *testing.T, s *redistest.Sentinel) (stop func()) {
	t.Helper()
	master := s.Master.Admin()
	t.Cleanup(func() { _ = master.Close() })
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			info, err := master.Info(ctx, "clients").Result()
			if err == nil && !strings.Contains(info, "blocked_clients:0\r") {
				s.Relay.Release()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	return func() { cancel(); <-done }
}

// Issue 31, the hazard shown: without replica acknowledgements a grant is
// confirmed once the master has it. The master dies before its replica
// got the grant (the relay held it, then lost it with the master), the
// replica is promoted without it, and grants the lock again: two holders.
// This is the control for the acknowledgement tests; it must observe the
// overlap, or the set-up tests nothing.
func TestFailoverToALaggingReplicaGivesTwoHoldersWithoutAcks(t *testing.T) {
	r := lockAcrossLaggingFailover(t, "lagging", WithReplicaAcks(0, 0)) // the default would wait for the replica
	t.Logf("failover from SIGKILL to promotion: %v", r.Failover)
	require.NoError(t, r.AErr, "A's Lock, on the master")
	require.NoError(t, r.BErr, "B's TryLock, on the promoted replica")
	require.True(t, r.TwoHolders, "B was granted while A still held")
	require.Greater(t, r.B.Token(), r.A.Token(),
		"fencing tokens still rise across the lost grant: a store that checks them refuses A")
}

// Issue 31, the same sequence with the default acknowledgements: A's grant
// never reaches the replica, so A is told it failed (ErrNotReplicated,
// matching ErrNotObtained) and gave it back; B, on the promoted replica,
// is the only holder.
func TestFailoverToALaggingReplicaKeepsOneHolderWithAcks(t *testing.T) {
	r := lockAcrossLaggingFailover(t, "lagging-acked")
	require.Nil(t, r.A)
	require.ErrorIs(t, r.AErr, ErrNotObtained)
	require.ErrorIs(t, r.AErr, ErrNotReplicated)
	require.NoError(t, r.BErr, "B's TryLock, on the promoted replica")
	require.False(t, r.TwoHolders)
}

// Issue 31: a grant a replica acknowledged survives the promotion: B, on
// the promoted replica, is refused while A holds. The replica lags behind
// A's grant and catches up while A's Lock waits for its acknowledgement;
// A's Lock returns only then, and the master dies at once.
func TestFailoverKeepsAnAcknowledgedHold(t *testing.T) {
	r := lockAcrossFailover(t, "healthy", catchUpLag)
	require.NoError(t, r.AErr, "A's Lock, acknowledged by the replica")
	require.ErrorIs(t, r.BErr, ErrNotObtained, "B's TryLock on the promoted replica")
	require.NoError(t, r.A.Context().Err(), "A still holds")
}

// The control of TestFailoverKeepsAnAcknowledgedHold: the same sequence
// without acknowledgements. A's Lock returns once the master has the
// grant, before the replica caught up; the master dies at once and the
// promoted replica grants B: two holders. The acknowledgement, not the
// failover's timing, is what kept A's hold.
func TestFailoverLosesTheSameHoldWithoutAcks(t *testing.T) {
	r := lockAcrossFailover(t, "healthy", catchUpLag, WithReplicaAcks(0, 0))
	require.NoError(t, r.AErr, "A's Lock, on the master")
	require.NoError(t, r.BErr, "B's TryLock, on the promoted replica")
	require.True(t, r.TwoHolders, "B was granted while A still held")
}
