package rlock_test

// Attacks on replica acknowledgements from the outside, issue 31: the
// renewal that confirms a grant made with a short lease (liveness keys).
// Helpers in attack_acks_test.go and attack_helpers_test.go.

import (
	"context"
	"testing"
	"time"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/rlock"
)

// atkLiveness is the liveness TTL of the attack: the lease a hand-off
// grant has until its waiter's client confirms it.
const atkLiveness = 500 * time.Millisecond

// "That grant's lease is at most the liveness TTL until the waiter
// confirms it: its client renews it to the lease it asked for as soon as
// the message arrives", and "a renewal not acknowledged moves no
// validity". W (liveness keys, acknowledgements) is granted by H's
// release; its replica acknowledges the grant (the relay lets through what
// it held, the grant included) and nothing after it (the relay holds
// again), so the renewal that confirms the grant is on the master only.
// The replica's copy of W's hold then expires with the short lease. Once it
// has, W's Context must have ended: the master dies, the replica is
// promoted, and a bystander on it takes the lock. Two holders otherwise.
func TestAttackAcksUnacknowledgedConfirmation(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	replica, relay := redistest.StartLaggingReplica(t, srv)
	h := atkUnacked(t, srv)
	w := atkClient(t, srv, rlock.WithLivenessKeys(), rlock.WithLivenessTTL(atkLiveness),
		rlock.WithReplicaAcks(1, atkAckTimeout))
	const name = "confirm"
	l, err := h.Lock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	got := atkTakeInBackground(ctx, w, "lock", name)
	atkWaitLen(t, srv.Admin(), atkQueue("lock", name), 1)
	relay.Hold()
	granted := time.Now()
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// W's acknowledgement (its SET, then WAIT's GETACK) is in the held
	// stream once the relay holds the GETACK. A fixed 150 ms sleep here
	// released the relay, and held again, before W's SET and GETACK came
	// under CI load: they were held for good, and W's grant failed with
	// "0 of 1 replicas acknowledged within 1s", whatever the timeout.
	// Released on the GETACK, the replica acknowledges one relay hop
	// later: the suite's atkAckTimeout covers that, as for every other
	// running replica, and a wider timeout would hide no other cause.
	atkAwait(t, "W waits for the grant's acknowledgement", func() bool { return relay.Holds("GETACK") })
	relay.Release()
	relay.Hold()
	r := atkAwaitTaken(t, got, "W's Lock")
	if r.err != nil {
		t.Fatalf("W's grant, acknowledged: %v", r.err)
	}
	defer r.end()
	ra := replica.Admin()
	atkAwait(t, "the replica's copy of W's hold expires", func() bool {
		return ra.Exists(ctx, atkResourceKey("lock", name)).Val() == 0
	})
	t.Logf("the replica's copy expired %v after the grant; W alive: %v", time.Since(granted), r.held.Err() == nil)
	srv.Stop()
	relay.Drop()
	if err := ra.ReplicaOf(ctx, "no", "one").Err(); err != nil {
		t.Fatal(err)
	}
	b := atkUnacked(t, replica)
	bl, err := b.TryLock(ctx, name, rlock.WaitAtMost(time.Second))
	if err != nil {
		t.Fatalf("the bystander on the promoted replica: %v", err)
	}
	defer bl.Unlock(ctx)
	if err := r.held.Err(); err == nil {
		t.Fatal("two holders: W's Context is alive while the bystander holds the lock on the promoted replica")
	}
	t.Logf("W's Context ended: %v", context.Cause(r.held))
}
