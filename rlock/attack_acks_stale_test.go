package rlock_test

// Attacks on replica acknowledgements from the outside, issue 31: the
// default's count of a master's replicas, read long ago. Helpers in
// attack_acks_test.go and attack_helpers_test.go.

import (
	"testing"
	"time"

	"github.com/batonlock/baton/bench/redistest"
)

// "Counts are read at New, again every second and after a reconnect or a
// failed acknowledgement, so a failover or a new replica is seen within
// about a second." A default client on a master without replicas takes a
// lock (no acknowledgement: right). A replica then connects, and two
// seconds pass with no call. The next grant must wait for the replica's
// acknowledgement; here the replica lags (the relay holds its stream), so
// Lock must fail with ErrNotReplicated. A grant returned without it is
// lost when the master dies and the replica is promoted: a bystander on
// the promoted replica takes the lock beside the live handle.
func TestAttackAcksDefaultCountReadLongAgo(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	c := atkClient(t, srv)
	const name = "stale"
	l, err := c.Lock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	replica, relay := redistest.StartLaggingReplica(t, srv)
	time.Sleep(2 * time.Second) // twice replicaRecheck: the replica is to be seen by now
	relay.Hold()
	l, err = c.Lock(ctx, name)
	if err != nil {
		atkRequireNotReplicated(t, "the grant after the replica connected", err)
		return
	}
	defer l.Unlock(ctx)
	srv.Stop()
	relay.Drop()
	if err := replica.Admin().ReplicaOf(ctx, "no", "one").Err(); err != nil {
		t.Fatal(err)
	}
	bl, err := atkUnacked(t, replica).TryLock(ctx, name)
	if err != nil {
		t.Fatalf("the bystander on the promoted replica: %v", err)
	}
	defer bl.Unlock(ctx)
	if l.Context().Err() == nil {
		t.Fatal("two holders: the grant was confirmed unacknowledged 2 s after the replica connected, and the promoted replica granted the lock again")
	}
}
