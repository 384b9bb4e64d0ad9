package rlock_test

// Attacks on replica acknowledgements from the outside, issue 31: a
// WithOwner owner shared across clients, one acknowledged and one not.
// Helpers in attack_acks_test.go and attack_helpers_test.go.

import (
	"context"
	"testing"
	"time"

	"github.com/batonlock/baton/rlock"
)

// "A grant goes back once, with its own count ... never that of another
// call of the same WithOwner owner that re-entered the hold meanwhile."
// W1 (owner X, on an acked client) waits behind A; A releases with the
// replica stopped, so W1's grant waits for an acknowledgement that never
// comes; meanwhile D (owner X, on a client without acknowledgements)
// either re-enters the granted hold at once ("reenter") or waits behind W1
// as a second call of X ("queue"). W1's give-back must leave D's count:
// while D's handle is alive, a bystander E stays out; after D's Unlock, E
// gets in. For the plain lock, the RW lock's write, and its read (A then
// holds the write, and X's reads are granted together).
func TestAttackAcksSharedOwnerGiveBack(t *testing.T) {
	for _, kind := range []string{"lock", "write", "read"} {
		for _, d := range []string{"reenter", "queue"} {
			t.Run(kind+", "+d, func(t *testing.T) { atkSharedOwnerGiveBack(t, atkLockKind{kind, "shared-" + kind}, d) })
		}
	}
}

func atkSharedOwnerGiveBack(t *testing.T, k atkLockKind, d string) {
	ctx := atkCtx(t)
	srv, replica := atkReplicated(t)
	rdb := srv.Admin()
	a, w, dc, e := atkUnacked(t, srv), atkAcked(t, srv), atkUnacked(t, srv), atkUnacked(t, srv)
	ak := k
	if k.kind == "read" {
		ak.kind = "write"
	}
	l, err := ak.take(a, ctx)
	if err != nil {
		t.Fatal(err)
	}
	octx := rlock.WithOwner(ctx, "X")
	w1 := atkGo(ctx, func() (*rlock.Lock, error) { return k.take(w, octx) })
	atkWaitLen(t, rdb, k.qkey(), 1)
	var dl <-chan atkTaken
	takeD := func() { dl = atkGo(ctx, func() (*rlock.Lock, error) { return k.take(dc, octx) }) }
	if d == "queue" {
		takeD()
		atkWaitLen(t, rdb, k.qkey(), 2)
	}
	atkPause(t, replica)
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if d == "reenter" {
		atkAwait(t, "W1's grant is in Redis", func() bool { return rdb.LLen(ctx, k.qkey()).Val() == 0 })
		takeD()
	}
	r1 := atkAwaitTaken(t, w1, "W1's Lock")
	if r1.err == nil {
		_ = r1.end()
		t.Fatal("W1 was granted with its replica stopped")
	}
	atkRequireNotReplicated(t, "W1", r1.err)
	rd := atkAwaitTaken(t, dl, "D's Lock")
	if rd.err != nil {
		t.Fatalf("D (owner X, no acknowledgements): %v", rd.err)
	}
	t.Logf("after W1's give-back: %s", k.state(e, ctx))
	if rd.held.Err() != nil {
		t.Fatalf("D's handle ended with W1's give-back: %v", context.Cause(rd.held))
	}
	if le, err := k.tryOther(e, ctx, rlock.WaitAtMost(500*time.Millisecond)); err == nil {
		_ = le.Unlock(ctx)
		t.Fatalf("two holders: E got in beside D's hold of owner X (D alive: %v)", rd.held.Err() == nil)
	}
	if err := rd.end(); err != nil {
		t.Fatalf("D's Unlock: %v", err)
	}
	le, err := k.tryOther(e, ctx, rlock.WaitAtMost(time.Second))
	if err != nil {
		t.Fatalf("after D's Unlock, E is kept out: %v (%s)", err, k.state(e, ctx))
	}
	_ = le.Unlock(ctx)
}
