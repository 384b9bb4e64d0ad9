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

// TestAttackLockSetLeaseRunsOutWhileWaiting: a set WithLease holds its first
// member and waits for the second longer than the lease; Redis frees the
// first, another client takes it. The set must not come back with a live
// Context covering it.
func TestAttackLockSetLeaseRunsOutWhileWaiting(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	c, x, y := atkClient(t, srv), atkClient(t, srv), atkClient(t, srv)
	names := []string{"slw-a", "slw-b"}
	probe, err := c.LockAll(ctx, names)
	if err != nil {
		t.Fatal(err)
	}
	order := probe.Names()
	if err := probe.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	first, second := order[0], order[1]
	xl, err := x.Lock(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	type res struct {
		s   *rlock.LockSet
		err error
	}
	got := make(chan res, 1)
	go func() {
		s, err := c.LockAll(ctx, names, rlock.WithLease(200*time.Millisecond))
		got <- res{s, err}
	}()
	atkWaitLen(t, srv.Admin(), "baton:{"+second+"}:queue", 1)
	var yl *rlock.Lock
	atkAwait(t, "another client takes "+first, func() bool {
		l, err := y.TryLock(ctx, first)
		yl = l
		return err == nil
	})
	defer yl.Unlock(ctx)
	if err := xl.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r := atkWithin(t, got, "the set's return")
	if r.err != nil {
		t.Logf("the set failed: %v", r.err)
		return
	}
	defer r.s.Unlock(ctx)
	if r.s.Context().Err() == nil && yl.Context().Err() == nil {
		t.Fatalf("two holders of %q: the set returned with a live Context while another client holds it", first)
	}
}

// TestAttackLockSetMemberForceUnlockedWhileWaiting: this client force-unlocks
// the member a waiting set already holds; another client takes it; the
// set, granted its last member, must not return a live Context covering it.
func TestAttackLockSetMemberForceUnlockedWhileWaiting(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	c, x, y := atkClient(t, srv), atkClient(t, srv), atkClient(t, srv)
	names := []string{"sfu-a", "sfu-b"}
	probe, err := c.LockAll(ctx, names)
	if err != nil {
		t.Fatal(err)
	}
	order := probe.Names()
	if err := probe.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	first, second := order[0], order[1]
	xl, err := x.Lock(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	type res struct {
		s   *rlock.LockSet
		err error
	}
	got := make(chan res, 1)
	go func() {
		s, err := c.LockAll(ctx, names)
		got <- res{s, err}
	}()
	atkWaitLen(t, srv.Admin(), "baton:{"+second+"}:queue", 1)
	if n, err := c.ForceUnlock(ctx, first); err != nil || n != 1 {
		t.Fatalf("ForceUnlock(%s) = %d, %v", first, n, err)
	}
	yl, err := y.TryLock(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	defer yl.Unlock(ctx)
	if err := xl.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r := atkWithin(t, got, "the set's return")
	if r.err != nil {
		t.Logf("the set failed: %v", r.err)
		return
	}
	defer r.s.Unlock(ctx)
	if r.s.Context().Err() == nil {
		t.Fatalf("two holders of %q: the set returned with a live Context while another client holds it", first)
	}
}

// TestAttackLockSetRestartWhileWaiting: Redis restarts empty while a set holds
// its first member and waits for its second; another client takes the
// first. The set must not come back with a live Context covering it.
func TestAttackLockSetRestartWhileWaiting(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	c, x, y := atkClient(t, srv), atkClient(t, srv), atkClient(t, srv)
	names := []string{"srw-a", "srw-b"}
	probe, err := c.LockAll(ctx, names)
	if err != nil {
		t.Fatal(err)
	}
	order := probe.Names()
	if err := probe.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	first, second := order[0], order[1]
	if _, err := x.Lock(ctx, second); err != nil {
		t.Fatal(err)
	}
	type res struct {
		s   *rlock.LockSet
		err error
	}
	got := make(chan res, 1)
	go func() {
		s, err := c.LockAll(ctx, names)
		got <- res{s, err}
	}()
	atkWaitLen(t, srv.Admin(), "baton:{"+second+"}:queue", 1)
	srv.Restart()
	var yl *rlock.Lock
	atkAwait(t, "another client takes "+first, func() bool {
		l, err := y.TryLock(ctx, first)
		yl = l
		return err == nil
	})
	defer yl.Unlock(ctx)
	r := atkWithin(t, got, "the set's return")
	if r.err != nil {
		t.Logf("the set failed: %v", r.err)
		return
	}
	defer r.s.Unlock(ctx)
	// The client checks its holds one round trip after its reconnect.
	time.Sleep(200 * time.Millisecond)
	if r.s.Context().Err() == nil && yl.Context().Err() == nil {
		t.Fatalf("two holders of %q: the set holds it with a live Context, and so does another client", first)
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
