package rlock_test

// Outside attacks on the multi-lock through ctx: a set that re-enters a
// member through a handle, turns of re-entries, and handles of another
// Client.

import (
	"testing"
	"time"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/rlock"
)

// TestAttackLockSetTakesTurns: re-entries through one handle's Context take
// turns, and a set that re-enters through it is one of them: it waits for
// the re-entry held through the same handle.
func TestAttackLockSetTakesTurns(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	c := atkClient(t, srv)
	l, err := c.Lock(ctx, "st-a")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(ctx)
	r, err := c.Lock(l.Context(), "st-a")
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.TryLockAll(l.Context(), []string{"st-a", "st-b"}, rlock.WaitAtMost(300*time.Millisecond))
	if err == nil {
		s.Unlock(ctx)
		t.Fatal("two turns of st-a at once: a set re-entered through the handle while another re-entry through it is held")
	}
	if err := r.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	s, err = c.TryLockAll(l.Context(), []string{"st-a", "st-b"}, rlock.WaitAtMost(time.Second))
	if err != nil {
		t.Fatalf("the set's turn never came: %v", err)
	}
	if err := s.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestAttackLockSetUnlockKeepsReentry: a re-entry of a member through the
// set's Context keeps its Context, and the lock, after the set's Unlock.
func TestAttackLockSetUnlockKeepsReentry(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	c, other := atkClient(t, srv), atkClient(t, srv)
	s, err := c.LockAll(ctx, []string{"su-a", "su-b"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Lock(s.Context(), "su-a")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if r.Context().Err() != nil {
		t.Fatalf("the re-entry's Context ended with the set's Unlock: %v", r.Context().Err())
	}
	atkSetNoSecondHolder(t, ctx, r.Context(), other, "su-a")
	if _, err := other.TryLock(ctx, "su-b"); err != nil {
		t.Fatalf("su-b stayed held after the set's Unlock: %v", err)
	}
	if err := r.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := other.TryLock(ctx, "su-a"); err != nil {
		t.Fatalf("su-a stayed held after its last Unlock: %v", err)
	}
}

// TestAttackLockSetOutlivesOuterHandle: a set that re-entered a member
// through a handle keeps it after that handle's Unlock.
func TestAttackLockSetOutlivesOuterHandle(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	c, other := atkClient(t, srv), atkClient(t, srv)
	l, err := c.Lock(ctx, "so-a")
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.LockAll(l.Context(), []string{"so-a", "so-b"})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if s.Context().Err() != nil {
		t.Fatalf("the set's Context ended with the outer handle's Unlock: %v", s.Context().Err())
	}
	atkSetNoSecondHolder(t, ctx, s.Context(), other, "so-a")
	if err := s.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"so-a", "so-b"} {
		if _, err := other.TryLock(ctx, name); err != nil {
			t.Fatalf("%s stayed held after the set's Unlock: %v", name, err)
		}
	}
}

// TestAttackLockSetFixedLeaseInsideWatchdogHold: a set WithLease that
// re-enters a watchdog hold ends its own Context at its lease and leaves
// the outer hold alone; the member it took itself is freed by Redis.
func TestAttackLockSetFixedLeaseInsideWatchdogHold(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	c, other := atkClient(t, srv), atkClient(t, srv)
	l, err := c.Lock(ctx, "sfw-a")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(ctx)
	s, err := c.LockAll(l.Context(), []string{"sfw-a", "sfw-b"}, rlock.WithLease(150*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	atkAwait(t, "the set's Context ends at its lease", func() bool { return s.Context().Err() != nil })
	if l.Context().Err() != nil {
		t.Fatalf("the outer watchdog hold ended with the nested set's lease: %v", l.Context().Err())
	}
	atkSetNoSecondHolder(t, ctx, l.Context(), other, "sfw-a")
	atkAwait(t, "Redis frees sfw-b", func() bool {
		b, err := other.TryLock(ctx, "sfw-b")
		if err == nil {
			b.Unlock(ctx)
		}
		return err == nil
	})
	s.Unlock(ctx)
}

// TestAttackLockSetOtherClientsHandle: a handle of another Client is no
// handle of this one: a set with it in ctx takes its members under an
// owner of its own, and so waits for the other Client's hold.
func TestAttackLockSetOtherClientsHandle(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	c1, c2 := atkClient(t, srv), atkClient(t, srv)
	l, err := c1.Lock(ctx, "soc-a")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(ctx)
	s, err := c2.TryLockAll(l.Context(), []string{"soc-a", "soc-b"})
	if err == nil {
		s.Unlock(ctx)
		t.Fatal("a set on another Client re-entered a hold through a handle of the first")
	}
}
