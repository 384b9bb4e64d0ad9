package rlock_test

// Attacks on replica acknowledgements from the outside, issue 31: what
// races a grant's acknowledgement wait (an Unlock, a Close). Helpers in
// attack_acks_test.go and attack_helpers_test.go.

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/rlock"
)

// A re-entry waits for its acknowledgement while the handle it re-entered
// through unlocks. "Nor does the Unlock of the handle it re-entered
// through" end the re-entry: once acknowledged, it is a live handle of a
// hold Redis has, renewed by the watchdog, and its Unlock frees the lock.
// Not acknowledged, it is given back, and nothing is left held. Checked
// for a re-entry through the handle's Context and for a WithOwner owner's
// second call on the same client.
func TestAttackAcksUnlockDuringReentryAck(t *testing.T) {
	for _, acked := range []bool{true, false} {
		for _, via := range []string{"context", "owner"} {
			t.Run(via+map[bool]string{true: ", acknowledged", false: ", not acknowledged"}[acked], func(t *testing.T) {
				atkUnlockDuringReentryAck(t, via, acked)
			})
		}
	}
}

func atkUnlockDuringReentryAck(t *testing.T, via string, acked bool) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	_, relay := redistest.StartLaggingReplica(t, srv)
	const name = "reentryack"
	// A 3 s watchdog lease: a count left behind outlasts the bystander's
	// try, and the checks below span three renewal ticks.
	a := atkClient(t, srv, rlock.WithReplicaAcks(1, atkAckTimeout), rlock.WithWatchdogLease(3*time.Second))
	c := atkUnacked(t, srv)
	octx := ctx
	if via == "owner" {
		octx = rlock.WithOwner(ctx, "X")
	}
	l1, err := a.Lock(octx, name)
	if err != nil {
		t.Fatal(err)
	}
	reCtx := atkReentryCtx(via, octx, l1)
	relay.Hold()
	got := atkGo(ctx, func() (*rlock.Lock, error) { return a.Lock(reCtx, name) })
	atkAwait(t, "the re-entry counts in Redis", func() bool {
		st, err := c.Inspect(ctx, name)
		return err == nil && st.Holders[l1.Owner()] == 2
	})
	if err := l1.Unlock(ctx); err != nil {
		t.Fatalf("the outer Unlock: %v", err)
	}
	if acked {
		time.Sleep(200 * time.Millisecond)
		relay.Release()
	}
	r := atkAwaitTaken(t, got, "the re-entry")
	relay.Release()
	if r.err != nil {
		// Through the handle's Context, the outer Unlock also ends the
		// re-entry's ctx, and with it the wait: it may fail, as a call
		// cancelled during the acknowledgement wait, leaving nothing held.
		t.Logf("the re-entry failed: %v", r.err)
		if !acked && !errors.Is(r.err, context.Canceled) {
			atkRequireNotReplicated(t, "the re-entry", r.err)
		}
		atkBystanderGetsIn(t, ctx, c, name, "the re-entry's failure")
		return
	}
	if !acked {
		t.Fatal("the re-entry was granted with no acknowledgement")
	}
	for range 3 { // three renewal ticks
		time.Sleep(time.Second)
		if err := r.held.Err(); err != nil {
			t.Fatalf("the re-entry's hold ended after the outer Unlock: %v", context.Cause(r.held))
		}
		if l, err := c.TryLock(ctx, name); err == nil {
			_ = l.Unlock(ctx)
			t.Fatal("two holders: a bystander took the lock beside the live re-entry")
		}
	}
	if err := r.end(); err != nil {
		t.Fatalf("the re-entry's Unlock: %v", err)
	}
	atkBystanderGetsIn(t, ctx, c, name, "the re-entry's Unlock")
}

// atkReentryCtx is the ctx of a re-entry of l's hold: via "context", l's
// Context; via "owner", the ctx that took l, whose WithOwner owner it was.
func atkReentryCtx(via string, octx context.Context, l *rlock.Lock) context.Context {
	if via == "context" {
		return l.Context()
	}
	return octx
}

// atkBystanderGetsIn requires c to take the plain lock name at once: what
// happened (after) left nothing held.
func atkBystanderGetsIn(t *testing.T, ctx context.Context, c *rlock.Client, name, after string) {
	t.Helper()
	l, err := c.TryLock(ctx, name, rlock.WaitAtMost(500*time.Millisecond))
	if err != nil {
		st, _ := c.Inspect(ctx, name)
		t.Fatalf("after %s the lock is still held: %v (holders %v, TTL %v)", after, err, st.Holders, st.TTL)
	}
	_ = l.Unlock(ctx)
}

// "Close ... releases the locks this client still holds ... It also waits
// for the clean-ups still going on in the background (give-backs of failed
// calls ...)", and "a failed call never leaves the lock taken". A Close
// while a free acquire, a hand-off grant and a semaphore grant wait for
// their acknowledgements: each call fails, and once Close has returned
// nothing is held (a bystander takes each at once), and no key is left
// without an expiry.
func TestAttackAcksCloseDuringTheAckWait(t *testing.T) {
	ctx := atkCtx(t)
	srv, replica := atkReplicated(t)
	rdb := srv.Admin()
	a := atkUnclosed(t, srv, rlock.WithReplicaAcks(1, 2*time.Second))
	h, c := atkUnacked(t, srv), atkUnacked(t, srv)
	_, release, err := atkHold(h, ctx, "lock", "handed")
	if err != nil {
		t.Fatal(err)
	}
	handed := atkTakeInBackground(ctx, a, "lock", "handed")
	atkWaitLen(t, rdb, atkQueue("lock", "handed"), 1)
	atkPause(t, replica)
	free := atkTakeInBackground(ctx, a, "lock", "free")
	sem := atkTakeInBackground(ctx, a, "sem", "sem")
	if err := release(); err != nil {
		t.Fatal(err)
	}
	atkAwait(t, "every grant is in Redis", func() bool {
		return rdb.Exists(ctx, atkResourceKey("lock", "handed"), atkResourceKey("lock", "free"), atkResourceKey("sem", "sem")).Val() == 3
	})
	time.Sleep(100 * time.Millisecond)
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for what, ch := range map[string]<-chan atkTaken{"handed": handed, "free": free, "sem": sem} {
		if r := atkAwaitTaken(t, ch, what); r.err == nil {
			t.Errorf("%s: Lock returned a handle across Close (alive: %v)", what, r.held.Err() == nil)
		}
	}
	atkBystanderGetsIn(t, ctx, c, "handed", "Close")
	atkBystanderGetsIn(t, ctx, c, "free", "Close")
	p, err := c.Semaphore("sem", 1).TryAcquire(ctx, 1, rlock.WaitAtMost(time.Second))
	if err != nil {
		t.Fatalf("after Close the semaphore is still held: %v", err)
	}
	_ = p.Release(ctx)
	atkNoImmortalKeys(t, ctx, rdb)
}

// atkNoImmortalKeys fails the test for every key without an expiry but a
// semaphore's size (which expires only once the semaphore is idle).
func atkNoImmortalKeys(t *testing.T, ctx context.Context, rdb *redis.Client) {
	t.Helper()
	for _, k := range rdb.Keys(ctx, "*").Val() {
		if strings.HasSuffix(k, ":sem:size") {
			continue
		}
		if rdb.PTTL(ctx, k).Val() == -1 {
			t.Errorf("leak: key %q (%s) has no expiry", k, rdb.Type(ctx, k).Val())
		}
	}
}

// A reconnect of the grant line racing a hand-off grant that must be
// acknowledged: W (acked) waits behind H; W's pub/sub connection is killed
// (CLIENT KILL TYPE pubsub) at about the moment H unlocks, so the grant is
// published to nobody, or reaches W just before its connection drops, or
// W's resync look finds it. "After every resubscribe, each waiter looks
// again ... The lock is recovered within the reconnect time, never a
// lease", and the reconnect's check of W's holds must not cut off the
// grant W is taking. Each round W must hold within atkWakeBound, alone.
func TestAttackAcksReconnectRacesAGrant(t *testing.T) {
	ctx := atkCtx(t)
	srv, _ := atkReplicated(t)
	rdb := srv.Admin()
	h, w, c := atkUnacked(t, srv), atkAcked(t, srv), atkUnacked(t, srv)
	const name = "racing"
	const rounds = 12
	for round := range rounds {
		l, err := h.Lock(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		got := atkTakeInBackground(ctx, w, "lock", name)
		atkWaitLen(t, rdb, atkQueue("lock", name), 1)
		offset := time.Duration(round%6) * 200 * time.Microsecond
		go func() {
			time.Sleep(offset)
			rdb.ClientKillByFilter(ctx, "TYPE", "pubsub")
		}()
		released := time.Now()
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-got:
			if r.err != nil {
				t.Fatalf("round %d: W failed: %v", round, r.err)
			}
			if bl, err := c.TryLock(ctx, name); err == nil {
				_ = bl.Unlock(ctx)
				t.Fatalf("round %d: two holders: a bystander got in beside W (alive: %v)", round, r.held.Err() == nil)
			}
			if err := r.end(); err != nil {
				t.Fatalf("round %d: W's Unlock: %v", round, err)
			}
		case <-time.After(atkWakeBound):
			t.Fatalf("round %d: lost wake-up: W waits %v after the release (offset %v)", round, atkWakeBound, offset)
		}
		t.Logf("round %d: W held %v after the release", round, time.Since(released))
	}
}

// "Re-entry takes turns": a re-entry through a handle's Context "is
// granted at once when no other re-entry through the same handle is still
// held; otherwise it waits ... until that one unlocks". G1 re-enters
// through l's Context and waits for an acknowledgement that never comes
// (its re-entry is given back); G2, forked from the same Context, waits
// for G1's turn. G1's re-entry is not held once it has failed: G2 must go
// on at once, not wait for a turn nobody will give back.
func TestAttackAcksFailedReentryGivesTheTurnBack(t *testing.T) {
	ctx := atkCtx(t)
	srv, replica := atkReplicated(t)
	a := atkAcked(t, srv)
	const name = "turns"
	l, err := a.Lock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(ctx)
	resume := atkPause(t, replica)
	g1 := atkGo(ctx, func() (*rlock.Lock, error) { return a.Lock(l.Context(), name) })
	time.Sleep(100 * time.Millisecond) // G1 holds the turn, waiting for its acknowledgement
	g2 := atkGo(ctx, func() (*rlock.Lock, error) { return a.Lock(l.Context(), name) })
	r1 := atkAwaitTaken(t, g1, "G1's re-entry")
	if r1.err == nil {
		_ = r1.end()
	}
	atkRequireNotReplicated(t, "G1's re-entry", r1.err)
	resume()
	select {
	case r2 := <-g2:
		if r2.err != nil {
			t.Fatalf("G2's re-entry: %v", r2.err)
		}
		t.Logf("G2 re-entered %v after G1's failure", r2.at.Sub(r1.at))
		_ = r2.end()
	case <-time.After(atkWakeBound):
		t.Fatalf("lost wake-up: G2 still waits for the turn %v after G1's re-entry failed", atkWakeBound)
	}
}
