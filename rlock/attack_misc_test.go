package rlock_test

// Attacks from the outside (public API and bench/redistest only), issue 30
// follow-up. Each test names the README promise it checks. Helpers in
// attack_helpers_test.go.

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/rlock"
)

// Cross-resource re-entry: the RW lock "is a resource of its own, distinct
// from the plain lock of the same name". A ctx carrying a plain lock's
// handle must not let rw.Lock / rw.RLock re-enter anything: with another
// client holding the RW lock's read, a write taken through the plain lock's
// Context would be a write beside a read.
func TestAttackCrossResourceReentry(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	a, b := atkClient(t, srv), atkClient(t, srv)
	const name = "xres"

	p, err := a.Lock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Unlock(ctx)
	r, err := b.RWLock(name).RLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Unlock(ctx)

	w, err := a.RWLock(name).TryLock(p.Context(), rlock.WaitAtMost(300*time.Millisecond))
	if err == nil {
		defer w.Unlock(ctx)
		t.Fatalf("write granted through a plain lock's Context while another client's read holds (read alive: %v)", r.Context().Err() == nil)
	}
	if !errors.Is(err, rlock.ErrNotObtained) {
		t.Errorf("rw.TryLock through a plain lock's Context: %v, want ErrNotObtained", err)
	}

	// The reverse: a plain lock held by b, re-entered through an RW write's Context on a.
	q, err := b.Lock(ctx, name+"2")
	if err != nil {
		t.Fatal(err)
	}
	defer q.Unlock(ctx)
	w2, err := a.RWLock(name + "2").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Unlock(ctx)
	l, err := a.TryLock(w2.Context(), name+"2", rlock.WaitAtMost(300*time.Millisecond))
	if err == nil {
		defer l.Unlock(ctx)
		t.Fatalf("plain lock granted through an RW write's Context while another client holds it")
	}
	if !errors.Is(err, rlock.ErrNotObtained) {
		t.Errorf("TryLock through an RW write's Context: %v, want ErrNotObtained", err)
	}
}

// SetMax lowering below the head's ask drops the head ("the resize dropped
// its record, so it blocks nobody behind it"), and "a smaller one ... admits
// nobody until the permits held are below it". Size 4, 1 held; queue: ask 4
// (head), ask 1. SetMax(3): the head's record goes, 1 held < 3, the ask for 1
// fits and nobody is ahead of it: it should be admitted at once, not at its
// next look (lease/3 = 10 s).
func TestAttackSetMaxLowerStrandsNext(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	a, b, c := atkClient(t, srv), atkClient(t, srv), atkClient(t, srv)
	rdb := srv.Admin()
	const name = "setmax"
	sa := a.Semaphore(name, 4)

	hold, err := sa.Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Release(ctx)
	big := make(chan error, 1)
	go func() {
		p, err := b.Semaphore(name, 4).Acquire(ctx, 4)
		if err == nil {
			p.Release(ctx)
		}
		big <- err
	}()
	atkWaitLen(t, rdb, "baton:{"+name+"}:sem:queue", 1)
	small := make(chan time.Time, 1)
	go func() {
		p, err := c.Semaphore(name, 4).Acquire(ctx, 1)
		if err != nil {
			t.Error(err)
			small <- time.Time{}
			return
		}
		small <- time.Now()
		p.Release(ctx)
	}()
	atkWaitLen(t, rdb, "baton:{"+name+"}:sem:queue", 2)

	start := time.Now()
	if err := sa.SetSize(ctx, 3); err != nil {
		t.Fatal(err)
	}
	select {
	case at := <-small:
		if d := at.Sub(start); d > 2*time.Second {
			t.Errorf("ask for 1 admitted %v after SetMax", d)
		}
	case <-time.After(3 * time.Second):
		st, _ := sa.Inspect(ctx)
		t.Errorf("ask for 1 (fits: held %d of size %d, queued %d) not admitted 3 s after SetMax dropped the head", st.Held, st.Size, st.Queued)
		<-small
	}
	select {
	case err := <-big:
		if !errors.Is(err, rlock.ErrInvalidOption) {
			t.Errorf("ask for 4 after SetMax(3): %v, want ErrInvalidOption", err)
		}
	case <-time.After(15 * time.Second):
		t.Error("ask for 4 never told")
	}
}

// A fixed-lease re-entry inside a watchdog hold: "A fixed handle nested in a
// longer hold leaves that hold alone: only its own Context ends." After its
// lease ran out, Unlock returns ErrLockLost but "the release is sent all the
// same". Then the outer Unlock must free the lock: another client gets it at
// once, not after the watchdog lease.
func TestAttackExpiredInnerLeaseKeepsCount(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	a, b := atkClient(t, srv), atkClient(t, srv)
	const name = "inner"
	outer, err := a.Lock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	inner, err := a.Lock(outer.Context(), name, rlock.WithLease(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if outer.Context().Err() != nil {
		t.Fatalf("outer ended with its nested fixed lease: %v", context.Cause(outer.Context()))
	}
	t.Logf("inner.Unlock: %v", inner.Unlock(ctx))
	if err := outer.Unlock(ctx); err != nil {
		t.Fatalf("outer.Unlock: %v", err)
	}
	l, err := b.TryLock(ctx, name, rlock.WaitAtMost(2*time.Second))
	if err != nil {
		st, _ := a.Inspect(ctx, name)
		t.Fatalf("lock not free after both handles unlocked: %v; state %+v", err, st)
	}
	l.Unlock(ctx)
}

// Attack finding 3 (wrong error, no second holder; fails on every run):
// r := rw.RLock(w.Context()), w.Unlock(). r.Context() now carries an
// unlocked write handle and a live read. rw.Lock(r.Context()) is "a write
// inside a read only": ErrUpgrade at once (ErrUpgrade's doc: "a ctx that
// carries a read handle of the same RWLock and no write handle"). Observed:
// ErrNotObtained wrapping ErrNotHeld ("lock not held"): the call re-enters
// through the unlocked write handle it finds in the ctx's values, past the
// innermost handle, the read. Safe (nothing granted), but the caller is told
// its write was given up rather than that it asked for an upgrade. Related
// to item 12 (the read's Context derives from w's); a fix of item 12 that
// keeps the values keeps this.
func TestAttackUpgradeThroughDowngrade(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	a, b := atkClient(t, srv), atkClient(t, srv)
	const name = "updown"
	rw := a.RWLock(name)
	w, err := rw.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, err := rw.RLock(w.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Unlock(ctx)
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	rb, err := b.RWLock(name).TryRLock(ctx, rlock.WaitAtMost(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Unlock(ctx)
	start := time.Now()
	w2, err := rw.TryLock(r.Context(), rlock.WaitAtMost(500*time.Millisecond))
	if err == nil {
		w2.Unlock(ctx)
		t.Fatalf("write granted through a downgraded read's Context beside another client's read (%v)", rb.Context().Err())
	}
	if !errors.Is(err, rlock.ErrUpgrade) {
		t.Errorf("rw.TryLock(r.Context()) after downgrade: %v after %v, want ErrUpgrade", err, time.Since(start))
	}
}

// Re-entry through a lost hold's values: l taken WithLease(100ms) expires,
// client B takes the lock, then a Lock with context.WithoutCancel(l.Context())
// (the handle's values, e.g. carried into a background job) must not be
// granted while B holds: ErrNotHeld/ErrNotObtained, or a wait.
func TestAttackReentryThroughLostHandle(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	a, b := atkClient(t, srv), atkClient(t, srv)
	const name = "lostre"
	l, err := a.Lock(ctx, name, rlock.WithLease(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	lb, err := b.TryLock(ctx, name, rlock.WaitAtMost(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Unlock(ctx)
	keep := context.WithoutCancel(l.Context())
	if l2, err := a.TryLock(keep, name, rlock.WaitAtMost(300*time.Millisecond)); err == nil {
		l2.Unlock(ctx)
		t.Errorf("re-entry through a lost handle granted while B holds (B alive: %v)", lb.Context().Err() == nil)
	} else {
		t.Logf("re-entry through lost handle: %v", err)
	}
	rw := a.RWLock(name)
	w, err := rw.Lock(ctx, rlock.WithLease(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	wb, err := b.RWLock(name).TryLock(ctx, rlock.WaitAtMost(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer wb.Unlock(ctx)
	kw := context.WithoutCancel(w.Context())
	if r2, err := rw.TryRLock(kw, rlock.WaitAtMost(300*time.Millisecond)); err == nil {
		r2.Unlock(ctx)
		t.Errorf("read through a lost write's values granted beside B's write (B alive: %v)", wb.Context().Err() == nil)
	} else {
		t.Logf("read through lost write: %v", err)
	}
	l.Unlock(ctx)
	w.Unlock(ctx)
}

// Release twice at once: exactly one succeeds, the permits are freed once.
func TestAttackConcurrentRelease(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	a := atkClient(t, srv)
	s := a.Semaphore("rel2", 3)
	for range 20 {
		p1, err := s.Acquire(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		p2, err := s.Acquire(ctx, 2)
		if err != nil {
			t.Fatal(err)
		}
		errs := make(chan error, 2)
		go func() { errs <- p2.Release(ctx) }()
		go func() { errs <- p2.Release(ctx) }()
		e1, e2 := <-errs, <-errs
		if (e1 == nil) == (e2 == nil) {
			t.Fatalf("two Releases: %v, %v", e1, e2)
		}
		st, err := s.Inspect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Held != 1 {
			t.Fatalf("held %d after double release, want 1", st.Held)
		}
		p1.Release(ctx)
	}
}

// Re-entry turns: "goroutines forked from one Context take turns": a second
// re-entry through outer waits locally while the first is held. When the
// hold is lost meanwhile (ForceUnlock in the same client ends it at once),
// the waiting re-entry must not hang until its ctx ends, and must not be
// granted once the first re-entry unlocks (the hold is gone; another client
// may hold the lock).
func TestAttackTurnWaiterAfterLoss(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	a, b := atkClient(t, srv), atkClient(t, srv)
	const name = "turnloss"
	outer, err := a.Lock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	inner1, err := a.Lock(outer.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(outer.Context(), 20*time.Second)
	defer cancel()
	// Only the values of outer.Context(): a forked goroutine's ctx that does
	// not end with the handle (e.g. context.WithoutCancel for a background job).
	wctx = context.WithoutCancel(wctx)
	wctx, cancel2 := context.WithTimeout(wctx, 20*time.Second)
	defer cancel2()
	got := make(chan error, 1)
	var inner2 *rlock.Lock
	go func() {
		l, err := a.Lock(wctx, name)
		inner2 = l
		got <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if _, err := a.ForceUnlock(ctx, name); err != nil {
		t.Fatal(err)
	}
	lb, err := b.TryLock(ctx, name, rlock.WaitAtMost(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Unlock(ctx)
	t.Logf("inner1.Unlock after the loss: %v", inner1.Unlock(ctx))
	select {
	case err := <-got:
		if err == nil {
			defer inner2.Unlock(ctx)
			t.Errorf("re-entry granted after the hold was lost, beside B (B alive %v, inner2 alive %v)", lb.Context().Err() == nil, inner2.Context().Err() == nil)
		} else {
			t.Logf("waiting re-entry: %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Errorf("waiting re-entry still waiting 3 s after its hold was lost")
		<-got
	}
	outer.Unlock(ctx)
}

// A handle's Context used with another Client: re-entry is "a handle of the
// same lock from the same client". On client B, A's handle is no handle of
// B's: the call must not be granted while A holds (nor after A's Unlock
// leave B holding a count A's Unlock freed).
func TestAttackHandleOfOtherClient(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	a, b, e := atkClient(t, srv), atkClient(t, srv), atkClient(t, srv)
	for _, kind := range []string{"lock", "write", "read"} {
		name := "otherclient-" + kind
		k := atkLockKind{kind, name}
		holder := k // A holds the write for the read too
		if kind == "read" {
			holder.kind = "write"
		}
		la, err := holder.take(a, ctx)
		again := func(c context.Context) (*rlock.Lock, error) {
			return k.try(b, c, rlock.WaitAtMost(300*time.Millisecond))
		}
		other := func() (*rlock.Lock, error) { return k.tryOther(e, ctx, rlock.WaitAtMost(300*time.Millisecond)) }
		if err != nil {
			t.Fatal(err)
		}
		lb, err := again(la.Context())
		if err != nil {
			t.Logf("%s: B through A's handle: %v", kind, err)
			la.Unlock(ctx)
			continue
		}
		t.Logf("%s: B through A's handle granted: owner %q (A's %q)", kind, lb.Owner(), la.Owner())
		if err := la.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if le, err := other(); err == nil {
			le.Unlock(ctx)
			t.Errorf("%s: E got in while B's handle (taken through A's Context) is alive (%v)", kind, lb.Context().Err())
		}
		lb.Unlock(ctx)
	}
}

// Semaphore under raising SetMax, random cancels, TryAcquire with
// WaitAtMost and asks up to the size: the permits held by live Permits
// never exceed the size (which only grows here), no wait outlives the
// sequence by a lease, and nothing is left after.
func TestAttackSemaphoreResizeStress(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	const name = "semstress"
	clients := []*rlock.Client{atkClient(t, srv), atkClient(t, srv), atkClient(t, srv)}
	var size atomic.Int64
	size.Store(2)
	if err := clients[0].Semaphore(name, 2).SetSize(ctx, 2); err != nil {
		t.Fatal(err)
	}
	var held atomic.Int64
	stop := time.Now().Add(4 * time.Second)
	var wg sync.WaitGroup
	for i := range 9 {
		c := clients[i%3]
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(i), 7))
			s := c.Semaphore(name, 6)
			for time.Now().Before(stop) {
				n := int64(1 + rnd.IntN(2))
				wctx, cancel := context.WithTimeout(ctx, time.Duration(5+rnd.IntN(200))*time.Millisecond)
				var p *rlock.Permit
				var err error
				if rnd.IntN(2) == 0 {
					p, err = s.Acquire(wctx, n)
				} else {
					p, err = s.TryAcquire(wctx, n, rlock.WaitAtMost(time.Duration(rnd.IntN(100))*time.Millisecond))
				}
				cancel()
				if err != nil {
					if !errors.Is(err, rlock.ErrNotObtained) {
						t.Errorf("acquire %d: %v", n, err)
						return
					}
					continue
				}
				if h := held.Add(n); h > size.Load() {
					t.Errorf("%d permits held by live Permits, size %d", h, size.Load())
				}
				time.Sleep(time.Duration(rnd.IntN(3)) * time.Millisecond)
				held.Add(-n)
				if err := p.Release(ctx); err != nil {
					t.Errorf("release: %v", err)
				}
			}
		})
	}
	wg.Go(func() {
		for n := int64(3); n <= 6 && time.Now().Before(stop); n++ {
			time.Sleep(700 * time.Millisecond)
			size.Store(n)
			if err := clients[1].Semaphore(name, 6).SetSize(ctx, n); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Wait()
	st, err := clients[0].Semaphore(name, 6).Inspect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Held != 0 || st.Queued != 0 {
		t.Errorf("left after the run: %+v", st)
	}
}
