package rlock_test

// Attacks on replica acknowledgements from the outside, issue 31: an
// acknowledgement that comes late. Helpers in attack_acks_test.go and
// attack_helpers_test.go.

import (
	"context"
	"testing"
	"time"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/rlock"
)

// atkLateLease is the fixed lease of the late-acknowledgement attacks, and
// atkLateAck how long the relay holds the replication stream: the
// acknowledgement comes well after the lease has run out in Redis, yet
// within the acknowledgement timeout (2 s, below go-redis's 3 s
// ReadTimeout).
const (
	atkLateLease = 300 * time.Millisecond
	atkLateAck   = 900 * time.Millisecond
)

// "A hold is valid until the send of its last confirmed acquire or
// renewal, plus the lease, less a drift margin", and "Lock and TryLock
// never return a lock whose validity has already passed when the grant's
// reply arrives". An acknowledgement is part of confirming the grant but
// not of its validity: the lease runs in Redis from the script. A grant
// whose acknowledgement arrives after its lease ran out must not come back
// as a live handle of a lock Redis no longer has (a bystander would take it
// beside it), nor as a handle already dead: it is given back, and Lock
// waits on (or fails).
func TestAttackAcksLateAckPastTheLease(t *testing.T) {
	for _, handOff := range []bool{false, true} {
		name := map[bool]string{false: "free acquire", true: "hand-off"}[handOff]
		t.Run(name, func(t *testing.T) { atkLateAckPastLease(t, handOff) })
	}
}

func atkLateAckPastLease(t *testing.T, handOff bool) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	_, relay := redistest.StartLaggingReplica(t, srv)
	rdb := srv.Admin()
	const name = "lateack"
	a := atkClient(t, srv, rlock.WithReplicaAcks(1, 2*time.Second))
	c := atkUnacked(t, srv)
	var release func() error
	if handOff {
		h, err := c.Lock(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		release = func() error { return h.Unlock(ctx) }
	}
	if !handOff {
		relay.Hold() // before the acquire: its grant is held
	}
	got := atkGo(ctx, func() (*rlock.Lock, error) { return a.Lock(ctx, name, rlock.WithLease(atkLateLease)) })
	start := time.Now()
	if handOff {
		atkWaitLen(t, rdb, "baton:{"+name+"}:queue", 1)
		relay.Hold()
		start = time.Now()
		if err := release(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(atkLateAck)
	relay.Release()
	r := atkAwaitTaken(t, got, "A's Lock")
	t.Logf("A's Lock returned %v after the grant: %v", r.at.Sub(start), r.err)
	if r.err != nil {
		return // failed, as a grant not acknowledged in time may
	}
	defer r.end()
	st, _ := c.Inspect(ctx, name)
	t.Logf("then Redis holds %v (TTL %v)", st.Holders, st.TTL)
	if r.held.Err() != nil {
		t.Fatalf("Lock returned a handle whose validity had passed: %v", context.Cause(r.held))
	}
	if l, err := c.TryLock(ctx, name); err == nil {
		_ = l.Unlock(ctx)
		t.Fatalf("two holders: a bystander took the lock beside A's live handle (A alive: %v)", r.held.Err() == nil)
	}
}
