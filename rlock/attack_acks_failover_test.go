package rlock_test

// Attacks on replica acknowledgements and the check after a reconnect from
// the outside, issue 31: failovers to a lagging replica (Sentinel, the
// replication stream held by a relay, the master SIGKILLed). Helpers in
// attack_acks_test.go and attack_helpers_test.go.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/rlock"
)

// atkSentinelClient is a Client on its own failover client of s.
func atkSentinelClient(t *testing.T, s *redistest.Sentinel, opts ...rlock.Option) *rlock.Client {
	t.Helper()
	c, err := rlock.New(s.FailoverClient(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// atkLoseTheMaster SIGKILLs s's master, drops what the relay held for the
// replica and has the sentinel promote it; it returns when the promoted
// replica has taken the master role.
func atkLoseTheMaster(s *redistest.Sentinel) {
	s.Master.Stop()
	s.Relay.Drop()
	s.Failover()
}

// atkEnded reports when ctx ends, on a channel.
func atkEnded(ctx context.Context) <-chan time.Time {
	at := make(chan time.Time, 1)
	go func() { <-ctx.Done(); at <- time.Now() }()
	return at
}

// "Checking after a reconnect ... a failover to a replica that lacked the
// holds ... A hold Redis no longer has is cut off with ErrLockLost, about
// one round trip after the reconnect (plus ... at most notify's 1 s)", for
// "every hold": a plain hold, one WithLease, an RW write and read, permits.
// A (acknowledgements off, so that its grants can be lost; it has waited
// once, so its grant line is subscribed) takes them all while the relay
// holds the stream; the master dies and the replica, without them, is
// promoted. B then takes each. Every one of A's Contexts must end with
// ErrLockLost within restartWindow of B's grant, not at A's next renewal
// (a third of the 30 s lease) or its lease's end.
func TestAttackAcksFailoverChecksEveryHold(t *testing.T) {
	ctx := atkCtx(t)
	s := redistest.StartSentinel(t, redistest.WithLaggingReplica())
	off := rlock.WithReplicaAcks(0, 0)
	a, b := atkSentinelClient(t, s, off), atkSentinelClient(t, s, off)
	waitOnce(t, ctx, a, b, "once")
	kinds := []string{"lock", "lock WithLease", "write", "read", "sem"}
	names := map[string]string{"lock": "plain", "lock WithLease": "fixed", "write": "w", "read": "r", "sem": "sem"}
	lost := map[string]<-chan time.Time{}
	held := map[string]context.Context{}
	s.Relay.Hold()
	for _, k := range kinds {
		hctx, _, err := atkHold(a, ctx, k, names[k])
		if err != nil {
			t.Fatalf("A's %s: %v", k, err)
		}
		held[k], lost[k] = hctx, atkEnded(hctx)
	}
	atkLoseTheMaster(s)
	promoted := time.Now()
	granted := map[string]time.Time{}
	for _, k := range kinds {
		bk := k
		if k == "read" {
			bk = "write" // a write excludes A's read
		}
		if _, _, err := atkHold(b, ctx, bk, names[k], rlock.WaitAtMost(5*time.Second)); err != nil {
			t.Fatalf("B's %s on the promoted replica: %v", k, err)
		}
		granted[k] = time.Now()
	}
	for _, k := range kinds {
		select {
		case at := <-lost[k]:
			if !errors.Is(context.Cause(held[k]), rlock.ErrLockLost) {
				t.Errorf("%s: A's Context ended with %v, want ErrLockLost", k, context.Cause(held[k]))
			}
			gap := at.Sub(granted[k])
			t.Logf("%s: B granted %v after the promotion; A told %v after that", k, granted[k].Sub(promoted), gap)
			if gap > restartWindow {
				t.Errorf("%s: two holders for %v: A's Context ended %v after B's grant", k, gap, gap)
			}
		case <-time.After(time.Until(granted[k].Add(10 * time.Second))):
			t.Errorf("%s: two holders: A's Context still alive 10 s after B's grant", k)
		}
	}
}

// "A grant not acknowledged is given back before Lock returns
// ErrNotReplicated", at the hand-off: A (acknowledged) releases to B while
// the relay holds the stream, and the master dies during B's
// acknowledgement wait. The promoted replica has A's hold (its release was
// lost: "a stall of at most one lease") and B queued. B must not come back
// with a live handle of a grant the promoted replica lacks: once A's lease
// has run out there, a bystander C takes the lock, and B's handle, if any,
// must have ended by then. Nor may the lock stall past A's lease.
func TestAttackAcksFailoverDuringHandOffAck(t *testing.T) {
	ctx := atkCtx(t)
	s := redistest.StartSentinel(t, redistest.WithLaggingReplica())
	const lease = 3 * time.Second
	a := atkSentinelClient(t, s, rlock.WithWatchdogLease(lease))
	b := atkSentinelClient(t, s, rlock.WithWatchdogLease(lease), rlock.WithReplicaAcks(1, 2*time.Second))
	c := atkSentinelClient(t, s, rlock.WithReplicaAcks(0, 0))
	const name = "handoff"
	l, err := a.Lock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	got := atkTakeInBackground(ctx, b, "lock", name)
	atkWaitLen(t, s.Master.Admin(), atkQueue("lock", name), 1)
	s.Relay.Hold()
	released := time.Now()
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// B is in its acknowledgement wait once the relay holds WAIT's GETACK:
	// a fixed sleep could kill the master before B's grant reached it.
	atkAwait(t, "B waits for the grant's acknowledgement", func() bool { return s.Relay.Holds("GETACK") })
	atkLoseTheMaster(s)
	r := atkAwaitTaken(t, got, "B's Lock")
	t.Logf("B's Lock returned %v after A's release: %v", r.at.Sub(released), r.err)
	// The relay dropped B's grant and the SET its WAIT waited for: no
	// handle B could return is of a grant the promoted replica has. Its
	// cut-off after the reconnect (checkHolds) would end one before C's
	// grant below, so only this says the acknowledgement refused it.
	if r.err == nil {
		t.Error("B's Lock returned a handle of a grant the promoted replica lacks")
	} else if !errors.Is(r.err, rlock.ErrNotObtained) {
		t.Errorf("B's Lock: got %v, want ErrNotObtained", r.err)
	}
	var bEnded <-chan time.Time
	if r.err == nil {
		defer r.end()
		bEnded = atkEnded(r.held)
	}
	cl, err := c.TryLock(ctx, name, rlock.WaitAtMost(2*lease))
	if err != nil {
		t.Fatalf("C kept out more than a lease after the failover: %v", err)
	}
	defer cl.Unlock(ctx)
	t.Logf("C took the lock %v after A's release", time.Since(released))
	if r.err == nil && r.held.Err() == nil {
		select {
		case <-bEnded:
		default:
			t.Fatal("two holders: B's handle is alive while C holds the lock")
		}
	}
}

// "After the script, one pipeline on the same master writes ... and sends
// WAIT": an acknowledgement counts for the master that has the grant. A
// failover the sentinel is asked for (SENTINEL FAILOVER, the old master
// alive) while a grant waits for its acknowledgement: the relay holds the
// grant back, so the promoted replica lacks it, and the old master, made a
// replica of the new one, resyncs without it. Whatever the call does with
// the failed WAIT, it must not come back with a live handle unless the new
// master has the hold: an acknowledgement from the new master's replica
// covers none of the old master's writes. For a free acquire and a
// hand-off.
func TestAttackAcksRequestedFailoverDuringTheAckWait(t *testing.T) {
	for _, handOff := range []bool{false, true} {
		t.Run(map[bool]string{false: "free acquire", true: "hand-off"}[handOff], func(t *testing.T) {
			atkRequestedFailoverDuringAck(t, handOff)
		})
	}
}

func atkRequestedFailoverDuringAck(t *testing.T, handOff bool) {
	ctx := atkCtx(t)
	s := redistest.StartSentinel(t, redistest.WithLaggingReplica())
	const name = "requested"
	h := atkSentinelClient(t, s)
	w := atkSentinelClient(t, s, rlock.WithReplicaAcks(1, 2*time.Second))
	var release func() error
	if handOff {
		l, err := h.Lock(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		release = func() error { return l.Unlock(ctx) }
	} else {
		s.Relay.Hold() // before W's acquire, whose WAIT could end unheld
	}
	got := atkGo(ctx, func() (*rlock.Lock, error) { return w.Lock(ctx, name) })
	if handOff {
		atkWaitLen(t, s.Master.Admin(), atkQueue("lock", name), 1)
		s.Relay.Hold()
		if err := release(); err != nil {
			t.Fatal(err)
		}
	}
	// W is in its acknowledgement wait once the relay holds WAIT's GETACK:
	// a fixed sleep could fail over before W's grant, or after its WAIT.
	atkAwait(t, "W waits for the grant's acknowledgement", func() bool { return s.Relay.Holds("GETACK") })
	s.Failover()
	s.Relay.Drop()
	r := atkAwaitTaken(t, got, "W's Lock")
	t.Logf("W's Lock: %v", r.err)
	if r.err != nil {
		return
	}
	defer r.end()
	holders := s.Master.Admin().HGetAll(ctx, atkResourceKey("lock", name)).Val()
	t.Logf("the new master's hold: %v", holders)
	if r.held.Err() == nil && holders[r.owner] == "" {
		t.Fatalf("W holds a live handle of a grant the new master lacks (holders %v)", holders)
	}
}

// The limit of "a release lost in a failover costs a stall of at most one
// lease" for an owner shared through WithOwner (finding 2 of the outside
// attack). A holds as owner X and unlocks while the relay holds the
// stream; the master dies, and the promoted replica still has X's count.
// X goes on taking the lock now and then (a job re-run under its own ID,
// as WithOwner is for): Redis cannot tell the stale count from another
// process's live hold of X, so each call re-enters it and raises its
// lease, and its Unlock leaves it. B, queued since the failover, is kept
// out as long as X comes back, and gets the lock within a lease of X's
// last call: the stall is one lease past the shared owner's last call.
func TestAcksLostReleaseOfASharedOwnerStallsUntilALeasePastItsLastCall(t *testing.T) {
	ctx := atkCtx(t)
	s := redistest.StartSentinel(t, redistest.WithLaggingReplica())
	// The lease outlasts the failover (about 1.5 s), so the promoted
	// replica still has X's count when X comes back.
	const lease = 6 * time.Second
	a := atkSentinelClient(t, s, rlock.WithWatchdogLease(lease))
	b := atkSentinelClient(t, s, rlock.WithWatchdogLease(lease))
	const name = "lostrelease"
	octx := rlock.WithOwner(ctx, "X")
	l, err := a.Lock(octx, name)
	if err != nil {
		t.Fatal(err)
	}
	s.Relay.Hold()
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	atkLoseTheMaster(s)
	got := atkTakeInBackground(ctx, b, "lock", name)
	var last time.Time
	for range 6 { // X comes back every quarter lease, for a lease and a half
		if x, err := a.TryLock(octx, name); err == nil {
			last = time.Now()
			_ = x.Unlock(ctx)
		}
		select {
		case r := <-got:
			_ = r.end()
			t.Fatalf("B got the lock while X kept re-entering its lost count (err %v)", r.err)
		case <-time.After(lease / 4):
		}
	}
	if last.IsZero() {
		t.Fatal("X never re-entered: the sequence did not happen")
	}
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("B: %v", r.err)
		}
		t.Logf("B got the lock %v after X's last call", r.at.Sub(last))
		_ = r.end()
	case <-time.After(time.Until(last.Add(lease + atkWakeBound))):
		st, _ := b.Inspect(ctx, name)
		t.Fatalf("B kept out past a lease after X's last call (holders %v, TTL %v)", st.Holders, st.TTL)
	}
}
