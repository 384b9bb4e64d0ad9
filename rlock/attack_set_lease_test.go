package rlock_test

// Outside attacks on the multi-lock (LockAll, TryLockAll, DoAll, LockSet):
// leases of members shared with other handles of the same hold, and a
// set whose early members' holds end while it waits for a later one.

import (
	"context"
	"testing"
	"time"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/rlock"
)

// atkSetNoSecondHolder fails the test if name is taken by other while held
// (a live Context) covers it: two holders.
func atkSetNoSecondHolder(t *testing.T, ctx context.Context, held context.Context, other *rlock.Client, name string) {
	t.Helper()
	l, err := other.TryLock(ctx, name)
	if err != nil {
		return
	}
	defer l.Unlock(ctx)
	if held.Err() == nil {
		t.Fatalf("two holders of %q: another client took it (token %d) while a live Context covers it", name, l.Token())
	}
}

// TestAttackLockSetShorterLeaseSharedOwner: a set WithLease taken by an owner
// (WithOwner) that already holds a member with a longer lease must not
// shorten that member's lease in Redis below the first handle's Context.
func TestAttackLockSetShorterLeaseSharedOwner(t *testing.T) {
	for _, first := range []string{"fixed 5s", "watchdog"} {
		t.Run(first, func(t *testing.T) {
			ctx := atkCtx(t)
			srv := redistest.Start(t)
			c, other := atkClient(t, srv), atkClient(t, srv)
			owned := rlock.WithOwner(ctx, "shared-owner")
			var opts []rlock.LockOption
			if first == "fixed 5s" {
				opts = append(opts, rlock.WithLease(5*time.Second))
			}
			l, err := c.Lock(owned, "sl-a", opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Unlock(ctx)
			s, err := c.LockAll(owned, []string{"sl-a", "sl-b"}, rlock.WithLease(100*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Unlock(ctx)
			time.Sleep(300 * time.Millisecond)
			atkSetNoSecondHolder(t, ctx, l.Context(), other, "sl-a")
		})
	}
}

// TestAttackLockSetShorterLeaseReentry: the same through ctx: a set WithLease
// that re-enters a member held with a longer lease through its handle.
func TestAttackLockSetShorterLeaseReentry(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	c, other := atkClient(t, srv), atkClient(t, srv)
	l, err := c.Lock(ctx, "slr-a", rlock.WithLease(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(ctx)
	s, err := c.LockAll(l.Context(), []string{"slr-a", "slr-b"}, rlock.WithLease(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Unlock(ctx)
	time.Sleep(300 * time.Millisecond)
	atkSetNoSecondHolder(t, ctx, l.Context(), other, "slr-a")
	if s.Context().Err() == nil {
		t.Fatal("the set's Context outlived its 100ms lease")
	}
}

// atkSetLoss is how a set's first member is lost while the set waits for
// its second: "lease" (the set WithLease waits longer than it), "force"
// (its own client force-unlocks it), "restart" (Redis restarts empty).
var atkSetLoss = []string{"lease", "force", "restart"}

// atkSetLost is what atkLoseWhileWaiting saw.
type atkSetLost struct {
	s       *rlock.LockSet
	err     error
	ended   error           // the set's Context's cause as LockAll returned
	other   context.Context // the other client's hold of the first member
	first   string
	cleanup func()
}

// atkLoseWhileWaiting: X holds the set's second member (canonical order);
// the set takes the first and waits for the second; the first is lost (how)
// and another client takes it; X unlocks. It returns the set's outcome.
func atkLoseWhileWaiting(t *testing.T, how string) atkSetLost {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	c, x, y := atkClient(t, srv), atkClient(t, srv), atkClient(t, srv)
	order := atkSetOrder(t, ctx, c, []string{"sl-a", "sl-b"})
	first, second := order[0], order[1]
	xl, err := x.Lock(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	var opts []rlock.LockOption
	if how == "lease" {
		opts = append(opts, rlock.WithLease(200*time.Millisecond))
	}
	got := make(chan atkSetLost, 1)
	go func() {
		s, err := c.LockAll(ctx, order, opts...)
		r := atkSetLost{s: s, err: err, first: first}
		if err == nil {
			r.ended = context.Cause(s.Context())
		}
		got <- r
	}()
	atkWaitLen(t, srv.Admin(), "baton:{"+second+"}:queue", 1)
	switch how {
	case "force":
		if n, err := c.ForceUnlock(ctx, first); err != nil || n != 1 {
			t.Fatalf("ForceUnlock(%s) = %d, %v", first, n, err)
		}
	case "restart":
		srv.Restart()
	}
	var yl *rlock.Lock
	atkAwait(t, "another client takes "+first, func() bool {
		l, err := y.TryLock(ctx, first)
		yl = l
		return err == nil
	})
	if how != "restart" {
		if err := xl.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	r := atkWithin(t, got, "the set's return")
	r.other = yl.Context()
	r.cleanup = func() {
		yl.Unlock(ctx)
		if r.s != nil {
			r.s.Unlock(ctx)
		}
	}
	return r
}

// TestAttackLockSetMemberLostWhileWaiting: a set's first member is lost
// while it waits for its second (its lease runs out, its own client
// force-unlocks it, Redis restarts empty), and another client takes it.
// The set never comes back with a live Context covering it beside the
// other client's hold.
func TestAttackLockSetMemberLostWhileWaiting(t *testing.T) {
	for _, how := range atkSetLoss {
		t.Run(how, func(t *testing.T) {
			r := atkLoseWhileWaiting(t, how)
			defer r.cleanup()
			if r.err != nil {
				return
			}
			// After a restart, the client checks its holds one round
			// trip after its reconnect.
			atkAwait(t, "the set's Context or the other hold ends", func() bool {
				return r.s.Context().Err() != nil || r.other.Err() != nil
			})
		})
	}
}

// TestAttackLockSetReturnsLostMember: the same sequences (lease, force);
// LockAll takes
// every lock "all or nothing", and a call that fails holds nothing. Here
// it returns nil, a set whose Context has already ended as it returns: it
// never held its first member and its second at once, since another
// client held the first when the second was granted.
func TestAttackLockSetReturnsLostMember(t *testing.T) {
	t.Skip("finding 2: LockAll returns success with a set that lost a member while it waited (lease, force); fails on a578abb")
	// "restart" is left out: there the client's check after its reconnect
	// races the set's return (2 of 6 runs returned an ended set), which
	// TestAttackLockSetMemberLostWhileWaiting bounds.
	for _, how := range atkSetLoss[:2] {
		t.Run(how, func(t *testing.T) {
			r := atkLoseWhileWaiting(t, how)
			defer r.cleanup()
			if r.err == nil && r.ended != nil {
				t.Errorf("LockAll returned nil with a set already ended (%v) while another client holds %s (Context live: %v): all or nothing broken",
					r.ended, r.first, r.other.Err() == nil)
			}
		})
	}
}

func atkWithin[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	panic("unreachable")
}

// TestAttackLockSetLongerReentryInsideShortSet: a Lock re-entering a member
// of a set WithLease(300ms) through the set's Context, with a longer lease
// (fixed 5 s, or the watchdog's): Redis keeps the member as long as the
// re-entry's Context lives.
func TestAttackLockSetLongerReentryInsideShortSet(t *testing.T) {
	for _, inner := range []string{"fixed 5s", "watchdog"} {
		t.Run(inner, func(t *testing.T) {
			ctx := atkCtx(t)
			srv := redistest.Start(t)
			c, other := atkClient(t, srv), atkClient(t, srv)
			s, err := c.LockAll(ctx, []string{"lr-a", "lr-b"}, rlock.WithLease(300*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Unlock(ctx)
			var opts []rlock.LockOption
			if inner == "fixed 5s" {
				opts = append(opts, rlock.WithLease(5*time.Second))
			}
			l, err := c.Lock(s.Context(), "lr-a", opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Unlock(ctx)
			time.Sleep(600 * time.Millisecond)
			atkSetNoSecondHolder(t, ctx, l.Context(), other, "lr-a")
		})
	}
}
