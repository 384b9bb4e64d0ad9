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
// grant has until its waiter's client confirms it. W must claim the grant,
// and have it acknowledged, within it: under load (4 busy loops on the 2
// cores) the relay in the test process forwarded W's GETACK 910 ms after
// the grant, so at 500 ms the grant died unclaimed in 3 runs of 20 and the
// scenario never happened. 2 s is twice the longest delay seen, and the
// replica's copy still expires within atkAwait's 5 s.
const atkLiveness = 2 * time.Second

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
	// W's acknowledgement (its SET, then WAIT's GETACK) passes the relay
	// as the relay receives the GETACK, on the relay's goroutine; all
	// after it stays held. The test goroutine released it before (on
	// seeing the GETACK held, then holding again), which let W's
	// confirmation through in the window between (the replica's copy then
	// never expired), or came after the grant's liveness lease (below).
	passed := relay.PassOn(redistest.GetAck)
	granted := time.Now()
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-passed:
	case <-time.After(5 * time.Second):
		t.Fatal("W's grant was never waited for (no GETACK in 5 s)")
	}
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
