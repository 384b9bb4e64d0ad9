package rlock_test

// Attacks from the outside (public API and bench/redistest only), issue 30
// follow-up. Each test names the README promise it checks.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/rlock"
)

func atkCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func atkClient(t *testing.T, srv *redistest.Server, opts ...rlock.Option) *rlock.Client {
	t.Helper()
	c, err := rlock.New(srv.Client(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func atkWaitLen(t *testing.T, rdb *redis.Client, key string, n int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if rdb.LLen(context.Background(), key).Val() == n {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("%s never reached length %d (now %d)", key, n, rdb.LLen(context.Background(), key).Val())
}

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

// Close while waiting: "Close wakes every waiting Lock call with ErrClosed",
// and "a call that gave up has left the queue when it returns". A Lock
// ended by Close must leave no queue entry behind (plain, RW, semaphore).
func TestAttackCloseWhileWaitingLeavesQueue(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	a := atkClient(t, srv)
	rdb := srv.Admin()
	b, err := rlock.New(srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	const name = "closewait"
	l, err := a.Lock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	w, err := a.RWLock(name).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Semaphore(name, 1).Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 3)
	go func() { _, err := b.Lock(ctx, name); errs <- err }()
	go func() { _, err := b.RWLock(name).RLock(ctx); errs <- err }()
	go func() { _, err := b.Semaphore(name, 1).Acquire(ctx, 1); errs <- err }()
	atkWaitLen(t, rdb, "baton:{"+name+"}:queue", 1)
	atkWaitLen(t, rdb, "baton:{"+name+"}:rw:queue", 1)
	atkWaitLen(t, rdb, "baton:{"+name+"}:sem:queue", 1)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := <-errs; !errors.Is(err, rlock.ErrClosed) {
			t.Errorf("waiter after Close: %v", err)
		}
	}
	for _, k := range []string{":queue", ":rw:queue", ":sem:queue"} {
		if n := rdb.LLen(ctx, "baton:{"+name+"}"+k).Val(); n != 0 {
			t.Errorf("%s: %d entries left after the waiter returned ErrClosed (PTTL %v)", k, n, rdb.PTTL(ctx, "baton:{"+name+"}"+k).Val())
		}
	}
	l.Unlock(ctx)
	w.Unlock(ctx)
	p.Release(ctx)
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

// Shared owner across clients, then Close of one of them. "callers with the
// same owner are one owner"; Close "releases the locks this client still
// holds". It may give back this client's counts only: B's re-entry under the
// same owner still holds, so a third client must not get the lock while B's
// Context is alive.
func TestAttackSharedOwnerClose(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	b, c := atkClient(t, srv), atkClient(t, srv)
	a, err := rlock.New(srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	const name = "sharedclose"
	octx := rlock.WithOwner(ctx, "job-1")
	la, err := a.Lock(octx, name)
	if err != nil {
		t.Fatal(err)
	}
	_ = la
	lb, err := b.Lock(octx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Unlock(ctx)
	rwa, err := a.RWLock(name).RLock(octx)
	if err != nil {
		t.Fatal(err)
	}
	_ = rwa
	rwb, err := b.RWLock(name).RLock(octx)
	if err != nil {
		t.Fatal(err)
	}
	defer rwb.Unlock(ctx)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if l, err := c.TryLock(ctx, name, rlock.WaitAtMost(500*time.Millisecond)); err == nil {
		l.Unlock(ctx)
		t.Errorf("plain lock: a third client got it after A's Close while B's hold of the same owner is alive (%v)", lb.Context().Err())
	}
	if w, err := c.RWLock(name).TryLock(ctx, rlock.WaitAtMost(500*time.Millisecond)); err == nil {
		w.Unlock(ctx)
		t.Errorf("RW lock: a write got in after A's Close while B's read of the same owner is alive (%v)", rwb.Context().Err())
	}
}

// Shared owner across clients, one handle's fixed lease runs out: its Unlock
// returns ErrLockLost "the release is sent all the same". It must give back
// only its own count: B's re-entry under the same owner is still held (and
// renewed), so a third client must not get the lock.
func TestAttackSharedOwnerStaleUnlock(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	a, b, c := atkClient(t, srv), atkClient(t, srv), atkClient(t, srv)
	const name = "sharedstale"
	octx := rlock.WithOwner(ctx, "job-2")
	la, err := a.Lock(octx, name, rlock.WithLease(150*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	lb, err := b.Lock(octx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Unlock(ctx)
	ra, err := a.RWLock(name).RLock(octx, rlock.WithLease(150*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	rb, err := b.RWLock(name).RLock(octx)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Unlock(ctx)
	time.Sleep(400 * time.Millisecond)
	t.Logf("stale plain Unlock: %v; stale read Unlock: %v", la.Unlock(ctx), ra.Unlock(ctx))
	if l, err := c.TryLock(ctx, name, rlock.WaitAtMost(500*time.Millisecond)); err == nil {
		l.Unlock(ctx)
		t.Errorf("plain lock: a third client got it while B's hold of the same owner is alive (%v)", lb.Context().Err())
	}
	if w, err := c.RWLock(name).TryLock(ctx, rlock.WaitAtMost(500*time.Millisecond)); err == nil {
		w.Unlock(ctx)
		t.Errorf("RW lock: a write got in while B's read of the same owner is alive (%v)", rb.Context().Err())
	}
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
	t.Skip("attack finding 3: fails today")
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

// Close racing a grant: B waits first, C behind it; A's Unlock and B's Close
// run at once. Whether the grant reaches B before or after its Close, it must
// pass on (a waiter "that stops waiting leaves the queue"; "A grant that
// reaches the client after its waiter has gone is released"), so C gets the
// lock within a few round trips, never a lease (30 s) later.
func TestAttackCloseRacingGrant(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	a, c := atkClient(t, srv), atkClient(t, srv)
	rdb := srv.Admin()
	for round := range 15 {
		for _, kind := range []string{"lock", "rw", "sem"} {
			name := "closegrant"
			b, err := rlock.New(srv.Client())
			if err != nil {
				t.Fatal(err)
			}
			var take func(cl *rlock.Client, ctx context.Context) (func(), error)
			var qkey string
			switch kind {
			case "lock":
				qkey = "baton:{" + name + "}:queue"
				take = func(cl *rlock.Client, ctx context.Context) (func(), error) {
					l, err := cl.Lock(ctx, name)
					if err != nil {
						return nil, err
					}
					return func() { l.Unlock(ctx) }, nil
				}
			case "rw":
				qkey = "baton:{" + name + "}:rw:queue"
				take = func(cl *rlock.Client, ctx context.Context) (func(), error) {
					l, err := cl.RWLock(name).Lock(ctx)
					if err != nil {
						return nil, err
					}
					return func() { l.Unlock(ctx) }, nil
				}
			case "sem":
				qkey = "baton:{" + name + "}:sem:queue"
				take = func(cl *rlock.Client, ctx context.Context) (func(), error) {
					p, err := cl.Semaphore(name, 1).Acquire(ctx, 1)
					if err != nil {
						return nil, err
					}
					return func() { p.Release(ctx) }, nil
				}
			}
			release, err := take(a, ctx)
			if err != nil {
				t.Fatal(err)
			}
			bdone := make(chan struct{})
			go func() {
				defer close(bdone)
				if rel, err := take(b, ctx); err == nil {
					rel()
				}
			}()
			atkWaitLen(t, rdb, qkey, 1)
			cgot := make(chan time.Time, 1)
			go func() {
				rel, err := take(c, ctx)
				if err != nil {
					t.Error(err)
					cgot <- time.Time{}
					return
				}
				cgot <- time.Now()
				rel()
			}()
			atkWaitLen(t, rdb, qkey, 2)
			start := time.Now()
			go release()
			time.Sleep(time.Duration(round%5) * 100 * time.Microsecond)
			_ = b.Close()
			<-bdone
			select {
			case <-cgot:
			case <-time.After(3 * time.Second):
				t.Fatalf("round %d %s: C not granted 3 s after A's release raced B's Close (queue %d)", round, kind, rdb.LLen(ctx, qkey).Val())
			}
			_ = start
		}
	}
}

// Close while the server is stopped (SIGSTOP), with holds, waiters and
// permits: "Close ... releases the locks this client still holds (best
// effort, bounded in time)", "waits for them up to its own bound, then
// cancels those left". It must return in bounded time and leave no
// goroutine behind.
func TestAttackCloseWhileServerPaused(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	a := atkClient(t, srv)
	rdb := redis.NewClient(redistest.Options(srv.Addr))
	defer rdb.Close()
	ignore := []goleak.Option{goleak.IgnoreCurrent()}
	b, err := rlock.New(rdb, rlock.WithWatchdogLease(600*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	const name = "closepaused"
	hold, err := a.Lock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Unlock(ctx)
	if _, err := b.Lock(ctx, name+"x"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.RWLock(name).RLock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Semaphore(name, 2).Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	go func() { _, err := b.Lock(ctx, name); errs <- err }()
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		_, err := b.Lock(wctx, name)
		errs <- err
	}()
	atkWaitLen(t, srv.Admin(), "baton:{"+name+"}:queue", 2)
	srv.Pause()
	time.Sleep(400 * time.Millisecond) // the 200 ms waiter's leave is stuck
	start := time.Now()
	closed := make(chan error, 1)
	go func() { closed <- b.Close() }()
	select {
	case err := <-closed:
		t.Logf("Close took %v: %v", time.Since(start), err)
	case <-time.After(15 * time.Second):
		srv.Resume()
		t.Fatal("Close did not return within 15 s while the server was stopped")
	}
	for range 2 {
		select {
		case err := <-errs:
			t.Logf("waiter: %v", err)
		case <-time.After(5 * time.Second):
			srv.Resume()
			t.Fatal("a waiter did not return after Close")
		}
	}
	rdb.Close()
	srv.Resume()
	time.Sleep(200 * time.Millisecond)
	goleak.VerifyNone(t, ignore...)
}

// No key without an expiry: "no key baton writes lives forever" (the
// semaphore's size excepted, documented). A workload of every kind, with
// cancelled waits, fixed leases, shared owners, downgrades, ForceUnlock and
// wire mode, then every key baton left must have a TTL.
func TestAttackNoImmortalKeys(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	a, b := atkClient(t, srv), atkClient(t, srv)
	wa := atkClient(t, srv, rlock.WithRedissonWire(""))
	wb := atkClient(t, srv, rlock.WithRedissonWire(""))
	rdb := srv.Admin()
	short := func() context.Context {
		c, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		t.Cleanup(cancel)
		return c
	}
	octx := rlock.WithOwner(ctx, "imm")
	step := func(what string, err error, t0 time.Time) {
		t.Helper()
		if d := time.Since(t0); d > 2*time.Second {
			t.Fatalf("%s took %v: %v", what, d, err)
		}
	}
	for i := range 5 {
		n := "imm" + string(rune('a'+i))
		t0 := time.Now()
		l, err := a.Lock(octx, n)
		step("a.Lock owner", err, t0)
		_, err = b.Lock(short(), n)
		step("b.Lock short", err, t0)
		lb, err := b.Lock(octx, n)
		step("b.Lock owner", err, t0)
		_, err = b.TryLock(ctx, n, rlock.WaitAtMost(30*time.Millisecond))
		step("b.TryLock", err, t0)
		if i%2 == 0 {
			a.ForceUnlock(ctx, n)
		}
		l.Unlock(ctx)
		lb.Unlock(ctx)
		rw := a.RWLock(n)
		t0 = time.Now()
		w, err := rw.Lock(octx, rlock.WithLease(time.Second))
		step("rw.Lock owner", err, t0)
		_, err = b.RWLock(n).RLock(short())
		step("b RLock short", err, t0)
		_, err = b.RWLock(n).TryLock(ctx, rlock.WaitAtMost(30*time.Millisecond))
		step("b rw TryLock", err, t0)
		r, err := rw.RLock(w.Context())
		step("downgrade", err, t0)
		rb, err := b.RWLock(n).RLock(octx)
		step("b RLock owner", err, t0)
		w.Unlock(ctx)
		if i%2 == 1 {
			rw.ForceUnlock(ctx)
		}
		r.Unlock(ctx)
		rb.Unlock(ctx)
		s := a.Semaphore(n, 2)
		t0 = time.Now()
		p, err := s.Acquire(ctx, 2)
		step("sem acquire", err, t0)
		_, err = b.Semaphore(n, 2).Acquire(short(), 1)
		step("sem acquire short", err, t0)
		_, err = b.Semaphore(n, 2).TryAcquire(ctx, 2, rlock.WaitAtMost(30*time.Millisecond))
		step("sem tryacquire", err, t0)
		s.SetSize(ctx, 3)
		p.Release(ctx)
		t0 = time.Now()
		wl, err := wa.Lock(octx, "wire"+n)
		step("wire lock", err, t0)
		_, err = wb.Lock(short(), "wire"+n)
		step("wire lock short", err, t0)
		wl2, err := wa.Lock(octx, "wire"+n)
		step("wire lock owner re-entry", err, t0)
		_, err = wb.TryLock(ctx, "wire"+n, rlock.WaitAtMost(30*time.Millisecond))
		step("wire trylock", err, t0)
		if wl != nil {
			wl.Unlock(ctx)
		}
		if wl2 != nil {
			wl2.Unlock(ctx)
		}
		if i == 4 {
			wa.ForceUnlock(ctx, "wire"+n)
		}
	}
	time.Sleep(100 * time.Millisecond)
	keys := rdb.Keys(ctx, "*").Val()
	for _, k := range keys {
		if strings.HasSuffix(k, ":sem:size") {
			continue
		}
		if ttl := rdb.PTTL(ctx, k).Val(); ttl == -1 {
			t.Errorf("key %q (%s) has no expiry", k, rdb.Type(ctx, k).Val())
		}
	}
	t.Logf("%d keys left", len(keys))
}

// Attack finding 2 (two holders after a restart; failed on every run before
// the fix): Redis restarts without its data while A holds (A has waited
// once, see waitOnce) and B waits. B
// resyncs on its reconnect and takes the lock 0-200 ms after the restart;
// A's Context stayed alive until its next watchdog tick, about 9.6 s later
// (lease/3 of the default 30 s), for the plain lock, the RW write and the
// semaphore alike, and for a hold WithLease until its lease ran out. Now
// the client checks its holds when its pub/sub connection is confirmed
// again (checkHolds), so A's Context ends at most restartWindow after B's
// grant, with ErrLockLost. Fencing tokens still order the two: the window
// cannot be zero, since B's look and A's check race.
func TestAttackRestartHolderBesideWaiter(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	for _, kind := range []string{"lock", "lock WithLease", "rw", "sem"} {
		a, b := atkClient(t, srv), atkClient(t, srv)
		name := "restart-" + strings.ReplaceAll(kind, " ", "-")
		waitOnce(t, ctx, a, b, name+"-once")
		held, err := restartHold(ctx, a, kind, name)
		if err != nil {
			t.Fatal(err)
		}
		lostAt := make(chan time.Time, 1)
		go func() { <-held.Done(); lostAt <- time.Now() }()
		got := make(chan time.Time, 1)
		go func() {
			c, err := restartHold(ctx, b, kind, name)
			if err != nil {
				t.Error(err)
			} else if c.Err() != nil {
				t.Errorf("%s: B's hold ended at once: %v", kind, context.Cause(c))
			}
			got <- time.Now()
		}()
		time.Sleep(300 * time.Millisecond)
		srv.Restart()
		start := time.Now()
		var bAt, aAt time.Time
		select {
		case bAt = <-got:
		case <-time.After(12 * time.Second):
			t.Fatalf("%s: waiter not granted 12 s after the restart", kind)
		}
		select {
		case aAt = <-lostAt:
		case <-time.After(12 * time.Second):
			t.Fatalf("%s: A's Context alive 12 s after B's grant", kind)
		}
		if !errors.Is(context.Cause(held), rlock.ErrLockLost) {
			t.Errorf("%s: A's Context ended with %v, want ErrLockLost", kind, context.Cause(held))
		}
		if gap := aAt.Sub(bAt); gap > restartWindow {
			t.Errorf("%s: A's Context ended %v after B's grant, more than %v", kind, gap, restartWindow)
		}
		t.Logf("%s: B granted %v after the restart; A told %v after that", kind, bAt.Sub(start), aAt.Sub(bAt))
	}
}

// waitOnce has a wait for name once, holding it through b, so that a's
// grant line is subscribed for good: the check after a reconnect rides on
// that connection, and a client that never waited has none (an open gap).
func waitOnce(t *testing.T, ctx context.Context, a, b *rlock.Client, name string) {
	t.Helper()
	l, err := b.Lock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(100*time.Millisecond, func() { _ = l.Unlock(ctx) })
	w, err := a.Lock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// restartWindow bounds how long after B's grant A may still believe it
// holds, in TestAttackRestartHolderBesideWaiter. Both clients find Redis
// back by their pub/sub reconnects, which retry with a backoff of up to
// notify's maxBackoff (1 s): B's may succeed just as Redis is up and A's
// just after its retry failed, a backoff later. After that, A's check is
// one round trip. The other second is for scheduling on a loaded machine.
// Before the fix, the gap was about 9.6 s.
const restartWindow = 2 * time.Second

// restartHold takes the resource of kind named name through c, and
// returns its hold's Context.
func restartHold(ctx context.Context, c *rlock.Client, kind, name string) (context.Context, error) {
	var l interface{ Context() context.Context }
	var err error
	switch kind {
	case "lock":
		l, err = c.Lock(ctx, name)
	case "lock WithLease":
		l, err = c.Lock(ctx, name, rlock.WithLease(60*time.Second))
	case "rw":
		l, err = c.RWLock(name).Lock(ctx)
	case "sem":
		l, err = c.Semaphore(name, 1).Acquire(ctx, 1)
	}
	if err != nil {
		return nil, err
	}
	return l.Context(), nil
}

// Wire mode, "within a process only the first waiter of a lock tries": the
// first waiter gives up at about the moment the holder's unlock message
// arrives. The second waiter of the same process must still be woken by
// that message (or try at once when it becomes first), not wait for a
// retry at the holder's lease (30 s).
func TestAttackWireFirstWaiterGivesUp(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	a := atkClient(t, srv, rlock.WithRedissonWire(""))
	b := atkClient(t, srv, rlock.WithRedissonWire(""))
	const name = "wirefirst"
	stuck := 0
	const rounds = 40
	for round := range rounds {
		l, err := a.Lock(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		w1ctx, cancel := context.WithCancel(ctx)
		w1 := make(chan error, 1)
		go func() {
			l, err := b.Lock(w1ctx, name)
			if err == nil {
				l.Unlock(ctx)
			}
			w1 <- err
		}()
		time.Sleep(20 * time.Millisecond)
		w2 := make(chan error, 1)
		go func() {
			l, err := b.Lock(ctx, name)
			if err == nil {
				l.Unlock(ctx)
			}
			w2 <- err
		}()
		time.Sleep(20 * time.Millisecond)
		go func() {
			time.Sleep(time.Duration(round%8) * 50 * time.Microsecond)
			cancel()
		}()
		l.Unlock(ctx)
		<-w1
		select {
		case err := <-w2:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(2 * time.Second):
			stuck++
			t.Errorf("round %d: second waiter not woken 2 s after the unlock while the first gave up", round)
			<-w2
		}
	}
	t.Logf("%d of %d rounds stuck", stuck, rounds)
}

// atkProxy forwards TCP to a Redis server; while held, replies to the
// clients are kept back (requests still reach the server), then delivered
// in order on release.
type atkProxy struct {
	ln      net.Listener
	mu      sync.Mutex
	held    bool
	heldReq bool
	cond    *sync.Cond
	live    []net.Conn
}

func atkStartProxy(t *testing.T, target string) *atkProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &atkProxy{ln: ln}
	p.cond = sync.NewCond(&p.mu)
	var conns sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		p.Release()
		p.ReleaseRequests()
		conns.Wait()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			conns.Add(2)
			go func() {
				defer conns.Done()
				defer s.Close()
				buf := make([]byte, 32<<10)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						p.mu.Lock()
						for p.heldReq {
							p.cond.Wait()
						}
						p.mu.Unlock()
						if _, werr := s.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
			go func() {
				defer conns.Done()
				defer c.Close()
				buf := make([]byte, 32<<10)
				for {
					n, err := s.Read(buf)
					if n > 0 {
						p.mu.Lock()
						for p.held {
							p.cond.Wait()
						}
						p.mu.Unlock()
						if _, werr := c.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
			p.mu.Lock()
			p.live = append(p.live, c, s)
			p.mu.Unlock()
			t.Cleanup(func() { c.Close(); s.Close() })
		}
	}()
	return p
}

func (p *atkProxy) Addr() string { return p.ln.Addr().String() }
func (p *atkProxy) Hold()        { p.mu.Lock(); p.held = true; p.mu.Unlock() }

// KillAll closes every connection made so far, both sides: what the
// clients had in flight is lost.
func (p *atkProxy) KillAll() {
	p.mu.Lock()
	for _, c := range p.live {
		c.Close()
	}
	p.live = nil
	p.mu.Unlock()
}

func (p *atkProxy) HoldRequests() { p.mu.Lock(); p.heldReq = true; p.mu.Unlock() }
func (p *atkProxy) ReleaseRequests() {
	p.mu.Lock()
	p.heldReq = false
	p.cond.Broadcast()
	p.mu.Unlock()
}
func (p *atkProxy) Release() {
	p.mu.Lock()
	p.held = false
	p.cond.Broadcast()
	p.mu.Unlock()
}

// Attack finding 1, the cancel path (fails about 1 run in 6; 2 of 14 runs
// measured): a shared owner's waiter granted while its client hears nothing
// (a proxy holds B's replies, so B's new connections cannot even start),
// then cancelled, while the same owner re-entered on another client in
// between. When the replies flow, the leave and the grant's hand-back race;
// in the failing runs both give back a count: X:2 becomes 0 (logged
// "after W1 gave up: map[]") and E gets the lock beside D.
// The cancelled waiter's give-back must take back its own count only
// ("callers with the same owner are one owner"; "A failed call never leaves
// the lock taken" — and never frees another caller's count): D's hold of
// owner X stays, and nobody else gets the lock while D's Context is alive.
func TestAttackSharedOwnerCancelledGrant(t *testing.T) {
	t.Skip("attack finding 1: fails today (about 1 run in 6)")
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	prx := atkStartProxy(t, srv.Addr)
	a, d, e := atkClient(t, srv), atkClient(t, srv), atkClient(t, srv)
	brdb := redis.NewClient(redistest.Options(prx.Addr()))
	t.Cleanup(func() { brdb.Close() })
	b, err := rlock.New(brdb)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	const name = "sharedgrant"
	rdb := srv.Admin()
	l, err := a.Lock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	octx := rlock.WithOwner(ctx, "X")
	wctx, cancel := context.WithCancel(octx)
	w1 := make(chan error, 1)
	go func() {
		l, err := b.Lock(wctx, name)
		if err == nil {
			t.Log("W1 got the lock after all")
			l.Unlock(ctx)
		}
		w1 <- err
	}()
	atkWaitLen(t, rdb, "baton:{"+name+"}:queue", 1)
	time.Sleep(50 * time.Millisecond)
	prx.Hold()
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	ld, err := d.TryLock(octx, name)
	if err != nil {
		t.Fatalf("owner X re-entry on D after W1's grant: %v", err)
	}
	defer ld.Unlock(ctx)
	st, _ := a.Inspect(ctx, name)
	t.Logf("after the grant and D's re-entry: %+v", st.Holders)
	cancelAt := time.Now()
	cancel()
	time.Sleep(400 * time.Millisecond)
	st, _ = a.Inspect(ctx, name)
	t.Logf("400 ms after the cancel, replies still held: %+v", st.Holders)
	prx.Release()
	select {
	case err := <-w1:
		t.Logf("W1: %v (%v after the cancel)", err, time.Since(cancelAt))
	case <-time.After(5 * time.Second):
		t.Fatal("W1 did not return")
	}
	time.Sleep(300 * time.Millisecond)
	st, _ = a.Inspect(ctx, name)
	t.Logf("after W1 gave up: %+v", st.Holders)
	if le, err := e.TryLock(ctx, name, rlock.WaitAtMost(500*time.Millisecond)); err == nil {
		le.Unlock(ctx)
		t.Errorf("E got the lock while D's hold of owner X is alive (%v)", ld.Context().Err())
	}
}

// Attack finding 1 (two holders; fails on every run). Item 2 of issue 30
// part 3 was found for RW reads; this is the plain lock's shared owner:
// W1 (owner X, WithLease 300 ms, client B) is granted while B hears nothing
// for 700 ms (a proxy holds B's replies); D re-enters owner X meanwhile
// (count 2, lease raised to 30 s). W1's late grant is past its validity, so
// it is given back, and the wait goes on. Whatever W1 does after, D's count
// must stay: once W1 is done, E must not get the lock while D's Context is
// alive. Observed: the give-back frees the lock entirely (D's count too);
// W1's wait then takes it afresh (new token, X:1, 300 ms) and returns a
// handle; after W1's Unlock nothing is held and E takes the lock while D's
// Context is alive (and any other client could have taken it at the
// give-back). Promises: "callers with the same owner are one owner"; "a
// grant that arrives with its validity already passed is released at once"
// (its grant, not the owner's other counts); mutual exclusion.
func TestAttackSharedOwnerLateGrantPlain(t *testing.T) {
	t.Skip("attack finding 1: fails today")
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	prx := atkStartProxy(t, srv.Addr)
	a, d, e := atkClient(t, srv), atkClient(t, srv), atkClient(t, srv)
	brdb := redis.NewClient(redistest.Options(prx.Addr()))
	t.Cleanup(func() { brdb.Close() })
	b, err := rlock.New(brdb)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	const name = "sharedlate"
	rdb := srv.Admin()
	l, err := a.Lock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	octx := rlock.WithOwner(ctx, "X")
	wctx, cancel := context.WithTimeout(octx, 3*time.Second)
	defer cancel()
	w1 := make(chan *rlock.Lock, 1)
	go func() {
		l, err := b.Lock(wctx, name, rlock.WithLease(300*time.Millisecond))
		t.Logf("W1: %v", err)
		w1 <- l
	}()
	atkWaitLen(t, rdb, "baton:{"+name+"}:queue", 1)
	time.Sleep(50 * time.Millisecond)
	prx.Hold()
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	ld, err := d.TryLock(octx, name)
	if err != nil {
		t.Fatalf("owner X re-entry on D after W1's grant: %v", err)
	}
	defer ld.Unlock(ctx)
	time.Sleep(700 * time.Millisecond)
	prx.Release()
	l1 := <-w1
	if l1 != nil {
		st, _ := a.Inspect(ctx, name)
		t.Logf("W1 returned a handle (token %d, D's %d); holders %+v ttl %v", l1.Token(), ld.Token(), st.Holders, st.TTL)
		time.Sleep(100 * time.Millisecond)
		t.Logf("W1 unlock: %v", l1.Unlock(ctx))
	}
	st, _ := a.Inspect(ctx, name)
	t.Logf("after W1: %+v ttl %v", st.Holders, st.TTL)
	if le, err := e.TryLock(ctx, name, rlock.WaitAtMost(500*time.Millisecond)); err == nil {
		le.Unlock(ctx)
		t.Errorf("E got the lock while D's hold of owner X is alive (%v)", ld.Context().Err())
	}
}

// Attack finding 1, the RW lock's write (fails on every run): the same
// sequence as TestAttackSharedOwnerLateGrantPlain with rw.Lock. Observed:
// after the late grant's give-back D's write count is gone, W1 takes the
// write afresh (new token, WriteCount 1, 300 ms), and after W1's Unlock a
// reader E gets in while D's write Context is alive.
func TestAttackSharedOwnerLateGrantWrite(t *testing.T) {
	t.Skip("attack finding 1: fails today")
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	prx := atkStartProxy(t, srv.Addr)
	a, d, e := atkClient(t, srv), atkClient(t, srv), atkClient(t, srv)
	brdb := redis.NewClient(redistest.Options(prx.Addr()))
	t.Cleanup(func() { brdb.Close() })
	b, err := rlock.New(brdb)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	const name = "sharedlatew"
	rdb := srv.Admin()
	l, err := a.RWLock(name).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	octx := rlock.WithOwner(ctx, "X")
	wctx, cancel := context.WithTimeout(octx, 3*time.Second)
	defer cancel()
	w1 := make(chan *rlock.Lock, 1)
	go func() {
		l, err := b.RWLock(name).Lock(wctx, rlock.WithLease(300*time.Millisecond))
		t.Logf("W1: %v", err)
		w1 <- l
	}()
	atkWaitLen(t, rdb, "baton:{"+name+"}:rw:queue", 1)
	time.Sleep(50 * time.Millisecond)
	prx.Hold()
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	ld, err := d.RWLock(name).TryLock(octx)
	if err != nil {
		t.Fatalf("owner X re-entry on D after W1's grant: %v", err)
	}
	defer ld.Unlock(ctx)
	time.Sleep(700 * time.Millisecond)
	prx.Release()
	l1 := <-w1
	if l1 != nil {
		st, _ := a.RWLock(name).Inspect(ctx)
		t.Logf("W1 returned a handle (token %d, D's %d); state %+v", l1.Token(), ld.Token(), st)
		time.Sleep(100 * time.Millisecond)
		t.Logf("W1 unlock: %v", l1.Unlock(ctx))
	}
	st, _ := a.RWLock(name).Inspect(ctx)
	t.Logf("after W1: %+v", st)
	if le, err := e.RWLock(name).TryRLock(ctx, rlock.WaitAtMost(500*time.Millisecond)); err == nil {
		le.Unlock(ctx)
		t.Errorf("E got the lock while D's hold of owner X is alive (%v)", ld.Context().Err())
	}
}

// Two waiters of one shared owner X on two clients queue behind A ("waiters
// that share an owner through WithOwner queue one by one, as separate
// calls"). A's release grants the first; the second, whose looks come every
// 200 ms (a 600 ms watchdog lease), must not take the first's grant as its
// own: whenever both hold, the count is 2, and after the first's Unlock
// nobody else gets the lock while the second's Context is alive.
func TestAttackSharedOwnerTwoWaiters(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	a, e := atkClient(t, srv), atkClient(t, srv)
	b := atkClient(t, srv, rlock.WithWatchdogLease(600*time.Millisecond))
	c := atkClient(t, srv, rlock.WithWatchdogLease(600*time.Millisecond))
	rdb := srv.Admin()
	for _, kind := range []string{"lock", "write"} {
		name := "twowait-" + kind
		qkey := "baton:{" + name + "}:queue"
		take := func(cl *rlock.Client, ctx context.Context) (*rlock.Lock, error) {
			return cl.Lock(ctx, name)
		}
		try := func(cl *rlock.Client) (*rlock.Lock, error) {
			return cl.TryLock(ctx, name, rlock.WaitAtMost(500*time.Millisecond))
		}
		if kind == "write" {
			qkey = "baton:{" + name + "}:rw:queue"
			take = func(cl *rlock.Client, ctx context.Context) (*rlock.Lock, error) {
				return cl.RWLock(name).Lock(ctx)
			}
			try = func(cl *rlock.Client) (*rlock.Lock, error) {
				return cl.RWLock(name).TryRLock(ctx, rlock.WaitAtMost(500*time.Millisecond))
			}
		}
		l, err := take(a, ctx)
		if err != nil {
			t.Fatal(err)
		}
		octx := rlock.WithOwner(ctx, "X-"+kind)
		w1, w2 := make(chan *rlock.Lock, 1), make(chan *rlock.Lock, 1)
		go func() { l, _ := take(b, octx); w1 <- l }()
		atkWaitLen(t, rdb, qkey, 1)
		go func() { l, _ := take(c, octx); w2 <- l }()
		atkWaitLen(t, rdb, qkey, 2)
		l.Unlock(ctx)
		l1 := <-w1
		var l2 *rlock.Lock
		select {
		case l2 = <-w2:
			t.Logf("%s: second waiter returned while the first holds", kind)
		case <-time.After(time.Second):
		}
		if err := l1.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if l2 == nil {
			select {
			case l2 = <-w2:
			case <-time.After(3 * time.Second):
				t.Fatalf("%s: second waiter not granted after the first's Unlock", kind)
			}
		}
		if le, err := try(e); err == nil {
			le.Unlock(ctx)
			t.Errorf("%s: E got in while the second waiter of owner X holds (%v)", kind, l2.Context().Err())
		}
		l2.Unlock(ctx)
	}
}

// The reply of a free acquire held back past its fixed lease: "Lock and
// TryLock never return a lock whose validity has already passed when the
// grant's reply arrives: such a grant is given back at once, and Lock waits
// on." The handle returned must be alive, and after its Unlock nothing is
// left: another client takes the resource at once.
func TestAttackDelayedAcquireReply(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	prx := atkStartProxy(t, srv.Addr)
	brdb := redis.NewClient(redistest.Options(prx.Addr()))
	t.Cleanup(func() { brdb.Close() })
	b, err := rlock.New(brdb)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	e := atkClient(t, srv)
	type res struct {
		ctx    context.Context
		unlock func() error
		err    error
	}
	kinds := map[string]func(c *rlock.Client, ctx context.Context, opts ...rlock.LockOption) res{
		"lock": func(c *rlock.Client, ctx context.Context, opts ...rlock.LockOption) res {
			l, err := c.Lock(ctx, "delayed-lock", opts...)
			if err != nil {
				return res{err: err}
			}
			return res{l.Context(), func() error { return l.Unlock(ctx) }, nil}
		},
		"write": func(c *rlock.Client, ctx context.Context, opts ...rlock.LockOption) res {
			l, err := c.RWLock("delayed-w").Lock(ctx, opts...)
			if err != nil {
				return res{err: err}
			}
			return res{l.Context(), func() error { return l.Unlock(ctx) }, nil}
		},
		"read": func(c *rlock.Client, ctx context.Context, opts ...rlock.LockOption) res {
			l, err := c.RWLock("delayed-r").RLock(ctx, opts...)
			if err != nil {
				return res{err: err}
			}
			return res{l.Context(), func() error { return l.Unlock(ctx) }, nil}
		},
		"sem": func(c *rlock.Client, ctx context.Context, opts ...rlock.LockOption) res {
			p, err := c.Semaphore("delayed-s", 1).Acquire(ctx, 1, opts...)
			if err != nil {
				return res{err: err}
			}
			return res{p.Context(), func() error { return p.Release(ctx) }, nil}
		},
	}
	for kind, take := range kinds {
		// Warm the connection pool and scripts.
		if r := take(b, ctx); r.err != nil {
			t.Fatal(r.err)
		} else {
			r.unlock()
		}
		got := make(chan res, 1)
		prx.Hold()
		go func() { got <- take(b, ctx, rlock.WithLease(100*time.Millisecond)) }()
		time.Sleep(250 * time.Millisecond)
		prx.Release()
		var r res
		select {
		case r = <-got:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no return", kind)
		}
		if r.err != nil {
			t.Logf("%s: %v", kind, r.err)
		} else {
			if r.ctx.Err() != nil {
				t.Errorf("%s: returned a handle whose Context has ended: %v", kind, context.Cause(r.ctx))
			}
			t.Logf("%s unlock: %v", kind, r.unlock())
		}
		start := time.Now()
		re := take(e, ctx, rlock.WaitAtMost(3*time.Second))
		if re.err != nil {
			t.Errorf("%s: another client could not take it: %v", kind, re.err)
			continue
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s: another client waited %v after the Unlock", kind, d)
		}
		re.unlock()
	}
}

// Item 10 of issue 30 part 3 was found for RWLock.ForceUnlock; the plain
// lock's ForceUnlock promises "A hold taken after the delete is left alone".
// Client C holds as owner X, calls ForceUnlock with its replies held back,
// and takes X again meanwhile (after the delete, on Redis). The new hold
// must keep its Context (and its renewal), not be cut off by the late reply.
func TestAttackForceUnlockLateReplySharedOwner(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	prx := atkStartProxy(t, srv.Addr)
	crdb := redis.NewClient(redistest.Options(prx.Addr()))
	t.Cleanup(func() { crdb.Close() })
	c, err := rlock.New(crdb)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	a := atkClient(t, srv)
	const name = "forcelate"
	octx := rlock.WithOwner(ctx, "X")
	bad := 0
	for round := range 10 {
		old, err := c.Lock(octx, name)
		if err != nil {
			t.Fatal(err)
		}
		prx.Hold()
		forced := make(chan error, 1)
		go func() { _, err := c.ForceUnlock(ctx, name); forced <- err }()
		time.Sleep(30 * time.Millisecond)
		again := make(chan *rlock.Lock, 1)
		go func() {
			l, err := c.Lock(octx, name)
			if err != nil {
				t.Error(err)
			}
			again <- l
		}()
		time.Sleep(30 * time.Millisecond)
		prx.Release()
		if err := <-forced; err != nil {
			t.Fatal(err)
		}
		l := <-again
		if l == nil {
			t.FailNow()
		}
		time.Sleep(50 * time.Millisecond)
		st, _ := a.Inspect(ctx, name)
		if l.Context().Err() != nil && len(st.Holders) > 0 {
			bad++
			t.Errorf("round %d: the hold taken after the delete was cut off (%v) while Redis holds it: %+v (token %d, new %d)", round, context.Cause(l.Context()), st.Holders, old.Token(), l.Token())
		}
		old.Unlock(ctx)
		l.Unlock(ctx)
		if st, _ := a.Inspect(ctx, name); len(st.Holders) > 0 {
			t.Errorf("round %d: left held after both Unlocks: %+v ttl %v", round, st.Holders, st.TTL)
			a.ForceUnlock(ctx, name)
		}
	}
	t.Logf("%d of 10 rounds bad", bad)
}

// The semaphore's ForceRelease with its reply held back, and a permit
// acquired after the delete meanwhile (in the same client): that permit was
// not ended by the force, so its Context must stay alive (Redis holds it).
func TestAttackForceReleaseLateReply(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	prx := atkStartProxy(t, srv.Addr)
	crdb := redis.NewClient(redistest.Options(prx.Addr()))
	t.Cleanup(func() { crdb.Close() })
	c, err := rlock.New(crdb)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	a := atkClient(t, srv)
	const name = "forcerel"
	s := c.Semaphore(name, 2)
	for round := range 10 {
		old, err := s.Acquire(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		prx.Hold()
		forced := make(chan error, 1)
		go func() { _, err := s.ForceRelease(ctx); forced <- err }()
		time.Sleep(30 * time.Millisecond)
		again := make(chan *rlock.Permit, 1)
		go func() {
			p, err := s.Acquire(ctx, 2)
			if err != nil {
				t.Error(err)
			}
			again <- p
		}()
		time.Sleep(30 * time.Millisecond)
		prx.Release()
		if err := <-forced; err != nil {
			t.Fatal(err)
		}
		p := <-again
		if p == nil {
			t.FailNow()
		}
		time.Sleep(50 * time.Millisecond)
		st, _ := a.Semaphore(name, 2).Inspect(ctx)
		if p.Context().Err() != nil && st.Held > 0 {
			t.Errorf("round %d: the permit taken after the force was cut off (%v) while Redis holds it: %+v", round, context.Cause(p.Context()), st)
		}
		old.Release(ctx)
		p.Release(ctx)
		if st, _ := a.Semaphore(name, 2).Inspect(ctx); st.Held > 0 {
			t.Errorf("round %d: held after both Releases: %+v", round, st)
			s.ForceRelease(ctx)
		}
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

// Close with re-entered holds (count 2): "Close ... releases the locks this
// client still holds". The whole hold must go, not one count of it: another
// client then takes each lock at once (baton format, and wire mode).
func TestAttackCloseReleasesWholeHold(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	for _, wire := range []bool{false, true} {
		var opts []rlock.Option
		if wire {
			opts = append(opts, rlock.WithRedissonWire(""))
		}
		a, err := rlock.New(srv.Client(), opts...)
		if err != nil {
			t.Fatal(err)
		}
		b := atkClient(t, srv, opts...)
		outer, err := a.Lock(ctx, "closewhole")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Lock(outer.Context(), "closewhole"); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Lock(rlock.WithOwner(ctx, "O"), "closewhole2"); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Lock(rlock.WithOwner(ctx, "O"), "closewhole2", rlock.WithLease(20*time.Second)); err != nil {
			t.Fatal(err)
		}
		if !wire {
			rw := a.RWLock("closewhole")
			w, err := rw.Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := rw.RLock(w.Context()); err != nil {
				t.Fatal(err)
			}
			if _, err := rw.Lock(w.Context()); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"closewhole", "closewhole2"} {
			if l, err := b.TryLock(ctx, n, rlock.WaitAtMost(time.Second)); err != nil {
				st, _ := b.Inspect(ctx, n)
				t.Errorf("wire %v: %s still held after Close: %v, %+v", wire, n, err, st)
			} else {
				l.Unlock(ctx)
			}
		}
		if !wire {
			if l, err := b.RWLock("closewhole").TryLock(ctx, rlock.WaitAtMost(time.Second)); err != nil {
				st, _ := b.RWLock("closewhole").Inspect(ctx)
				t.Errorf("RW still held after Close: %v, %+v", err, st)
			} else {
				l.Unlock(ctx)
			}
		}
	}
}

// Attack finding 1, the hand-back path (fails about 1 run in 5 for the plain
// lock; the write variant passed in the runs made): a shared owner's waiter
// W1 is granted while its client is cut off both ways; D re-enters owner X (count 2); W1 gives up (its leave goes to the
// background); then the grant message reaches B after its waiter has gone
// ("released"), and only then do B's requests reach Redis: the leave ("if it
// was granted ... passes the lock on") and the release of the unclaimed
// grant. Between them they must give back W1's one count only: D's count
// stays, and E must not get the lock while D's Context is alive.
func TestAttackSharedOwnerGrantAfterGone(t *testing.T) {
	t.Skip("attack finding 1: fails today (about 1 run in 6)")
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	prx := atkStartProxy(t, srv.Addr)
	a, d, e := atkClient(t, srv), atkClient(t, srv), atkClient(t, srv)
	brdb := redis.NewClient(redistest.Options(prx.Addr()))
	t.Cleanup(func() { brdb.Close() })
	b, err := rlock.New(brdb)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	rdb := srv.Admin()
	for _, kind := range []string{"lock", "write"} {
		name := "gone-" + kind
		qkey := "baton:{" + name + "}:queue"
		take := func(cl *rlock.Client, ctx context.Context) (*rlock.Lock, error) { return cl.Lock(ctx, name) }
		try := func(cl *rlock.Client, ctx context.Context, o ...rlock.LockOption) (*rlock.Lock, error) {
			return cl.TryLock(ctx, name, o...)
		}
		if kind == "write" {
			qkey = "baton:{" + name + "}:rw:queue"
			take = func(cl *rlock.Client, ctx context.Context) (*rlock.Lock, error) { return cl.RWLock(name).Lock(ctx) }
			try = func(cl *rlock.Client, ctx context.Context, o ...rlock.LockOption) (*rlock.Lock, error) {
				return cl.RWLock(name).TryLock(ctx, o...)
			}
		}
		l, err := take(a, ctx)
		if err != nil {
			t.Fatal(err)
		}
		octx := rlock.WithOwner(ctx, "X")
		wctx, cancel := context.WithCancel(octx)
		w1 := make(chan error, 1)
		go func() {
			l, err := take(b, wctx)
			if err == nil {
				t.Logf("%s: W1 got the lock after all", kind)
				l.Unlock(ctx)
			}
			w1 <- err
		}()
		atkWaitLen(t, rdb, qkey, 1)
		time.Sleep(50 * time.Millisecond)
		prx.Hold()
		prx.HoldRequests()
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		ld, err := try(d, octx)
		if err != nil {
			t.Fatalf("owner X re-entry on D after W1's grant: %v", err)
		}
		cancel()
		select {
		case err := <-w1:
			t.Logf("%s: W1: %v", kind, err)
		case <-time.After(5 * time.Second):
			t.Fatal("W1 did not return")
		}
		prx.Release()
		time.Sleep(300 * time.Millisecond)
		prx.ReleaseRequests()
		time.Sleep(500 * time.Millisecond)
		if le, err := try(e, ctx, rlock.WaitAtMost(500*time.Millisecond)); err == nil {
			le.Unlock(ctx)
			t.Errorf("%s: E got the lock while D's hold of owner X is alive (%v)", kind, ld.Context().Err())
		}
		ld.Unlock(ctx)
	}
}

// A shared owner's grant message lost with the connection ("after every
// resubscribe, each waiter looks again with its acquire, which reports a
// grant it missed"; the granted key is "for a waiter that missed the
// message"), while D re-entered owner X in between. W1's look must claim its
// own grant only: W1 and D together hold 2 counts, and after W1's Unlock D's
// count stays, so E must not get the lock while D's Context is alive.
func TestAttackSharedOwnerLostGrantMessage(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	prx := atkStartProxy(t, srv.Addr)
	a, d, e := atkClient(t, srv), atkClient(t, srv), atkClient(t, srv)
	brdb := redis.NewClient(redistest.Options(prx.Addr()))
	t.Cleanup(func() { brdb.Close() })
	b, err := rlock.New(brdb)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	rdb := srv.Admin()
	for _, kind := range []string{"lock", "write"} {
		name := "lostmsg-" + kind
		qkey := "baton:{" + name + "}:queue"
		take := func(cl *rlock.Client, ctx context.Context) (*rlock.Lock, error) { return cl.Lock(ctx, name) }
		try := func(cl *rlock.Client, ctx context.Context, o ...rlock.LockOption) (*rlock.Lock, error) {
			return cl.TryLock(ctx, name, o...)
		}
		if kind == "write" {
			qkey = "baton:{" + name + "}:rw:queue"
			take = func(cl *rlock.Client, ctx context.Context) (*rlock.Lock, error) { return cl.RWLock(name).Lock(ctx) }
			try = func(cl *rlock.Client, ctx context.Context, o ...rlock.LockOption) (*rlock.Lock, error) {
				return cl.RWLock(name).TryLock(ctx, o...)
			}
		}
		l, err := take(a, ctx)
		if err != nil {
			t.Fatal(err)
		}
		octx := rlock.WithOwner(ctx, "X")
		w1 := make(chan *rlock.Lock, 1)
		go func() {
			wctx, cancel := context.WithTimeout(octx, 8*time.Second)
			defer cancel()
			l, err := take(b, wctx)
			if err != nil {
				t.Errorf("%s: W1: %v", kind, err)
			}
			w1 <- l
		}()
		atkWaitLen(t, rdb, qkey, 1)
		time.Sleep(50 * time.Millisecond)
		prx.Hold()
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		ld, err := try(d, octx)
		if err != nil {
			t.Fatalf("owner X re-entry on D after W1's grant: %v", err)
		}
		prx.KillAll()
		prx.Release()
		l1 := <-w1
		if l1 == nil {
			t.FailNow()
		}
		if err := l1.Unlock(ctx); err != nil {
			t.Logf("%s: W1 Unlock: %v", kind, err)
		}
		if le, err := try(e, ctx, rlock.WaitAtMost(500*time.Millisecond)); err == nil {
			le.Unlock(ctx)
			t.Errorf("%s: E got the lock while D's hold of owner X is alive (%v)", kind, ld.Context().Err())
		}
		ld.Unlock(ctx)
	}
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
		var la *rlock.Lock
		var err error
		var again func(ctx context.Context) (*rlock.Lock, error)
		var other func() (*rlock.Lock, error)
		switch kind {
		case "lock":
			la, err = a.Lock(ctx, name)
			again = func(c context.Context) (*rlock.Lock, error) {
				return b.TryLock(c, name, rlock.WaitAtMost(300*time.Millisecond))
			}
			other = func() (*rlock.Lock, error) { return e.TryLock(ctx, name, rlock.WaitAtMost(300*time.Millisecond)) }
		case "write":
			la, err = a.RWLock(name).Lock(ctx)
			again = func(c context.Context) (*rlock.Lock, error) {
				return b.RWLock(name).TryLock(c, rlock.WaitAtMost(300*time.Millisecond))
			}
			other = func() (*rlock.Lock, error) {
				return e.RWLock(name).TryRLock(ctx, rlock.WaitAtMost(300*time.Millisecond))
			}
		case "read":
			la, err = a.RWLock(name).Lock(ctx)
			again = func(c context.Context) (*rlock.Lock, error) {
				return b.RWLock(name).TryRLock(c, rlock.WaitAtMost(300*time.Millisecond))
			}
			other = func() (*rlock.Lock, error) {
				return e.RWLock(name).TryLock(ctx, rlock.WaitAtMost(300*time.Millisecond))
			}
		}
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

// A failed Lock of a shared owner: "A failed Lock never leaves the lock
// taken: its give-back runs in the background" and is "undone by replaying
// its request ID, which tells, then releasing what it held". The call's
// reply is lost with its connection (no go-redis retry), after Redis ran it;
// D holds the same owner X, before the call (a re-entry) or taking it right
// after the call's acquire (so the failed call's count came first). The
// give-back may take the failed call's count only: D's stays, and E must not
// get the lock while D's Context is alive.
func TestAttackSharedOwnerFailedAcquireGiveBack(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	prx := atkStartProxy(t, srv.Addr)
	d, e := atkClient(t, srv), atkClient(t, srv)
	brdb := redis.NewClient(func() *redis.Options {
		o := redistest.Options(prx.Addr())
		o.MaxRetries = -1
		return o
	}())
	t.Cleanup(func() { brdb.Close() })
	b, err := rlock.New(brdb)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	for _, kind := range []string{"lock", "write", "read"} {
		for _, dFirst := range []bool{true, false} {
			name := fmt.Sprintf("failgive-%s-%v", kind, dFirst)
			take := func(cl *rlock.Client, ctx context.Context) (*rlock.Lock, error) { return cl.Lock(ctx, name) }
			try := func(cl *rlock.Client, ctx context.Context) (*rlock.Lock, error) {
				return cl.TryLock(ctx, name, rlock.WaitAtMost(500*time.Millisecond))
			}
			switch kind {
			case "write":
				take = func(cl *rlock.Client, ctx context.Context) (*rlock.Lock, error) { return cl.RWLock(name).Lock(ctx) }
				try = func(cl *rlock.Client, ctx context.Context) (*rlock.Lock, error) {
					return cl.RWLock(name).TryRLock(ctx, rlock.WaitAtMost(500*time.Millisecond))
				}
			case "read":
				take = func(cl *rlock.Client, ctx context.Context) (*rlock.Lock, error) { return cl.RWLock(name).RLock(ctx) }
				try = func(cl *rlock.Client, ctx context.Context) (*rlock.Lock, error) {
					return cl.RWLock(name).TryLock(ctx, rlock.WaitAtMost(500*time.Millisecond))
				}
			}
			octx := rlock.WithOwner(ctx, "X")
			// warm B's connection
			if l, err := take(b, ctx); err != nil {
				t.Fatal(err)
			} else {
				l.Unlock(ctx)
			}
			var ld *rlock.Lock
			if dFirst {
				if ld, err = take(d, octx); err != nil {
					t.Fatal(err)
				}
			}
			prx.Hold()
			got := make(chan error, 1)
			go func() {
				l, err := take(b, octx)
				if err == nil {
					l.Unlock(ctx)
				}
				got <- err
			}()
			time.Sleep(100 * time.Millisecond)
			if !dFirst {
				if ld, err = take(d, octx); err != nil {
					t.Fatal(err)
				}
			}
			prx.KillAll()
			prx.Release()
			err := <-got
			if err == nil {
				t.Logf("%s dFirst=%v: B's call succeeded after all", kind, dFirst)
			}
			time.Sleep(500 * time.Millisecond)
			if le, err := try(e, ctx); err == nil {
				le.Unlock(ctx)
				t.Errorf("%s dFirst=%v: E got in while D's hold of owner X is alive (%v); B's call: %v", kind, dFirst, ld.Context().Err(), err)
			}
			ld.Unlock(ctx)
		}
	}
}

// Liveness keys: "that grant's lease is at most the liveness TTL until the
// waiter confirms it ... (Lock returns on the message, valid for the short
// lease until then)". B's requests stop reaching Redis just before the grant
// (its confirmation never arrives); the message does. When C, queued behind,
// gets the lock after the short lease, B's Context must have ended.
func TestAttackLivenessUnconfirmedGrant(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	prx := atkStartProxy(t, srv.Addr)
	opts := []rlock.Option{rlock.WithLivenessKeys(), rlock.WithLivenessTTL(300 * time.Millisecond)}
	a, c := atkClient(t, srv, opts...), atkClient(t, srv, opts...)
	brdb := redis.NewClient(redistest.Options(prx.Addr()))
	t.Cleanup(func() { brdb.Close() })
	b, err := rlock.New(brdb, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	rdb := srv.Admin()
	for _, kind := range []string{"lock", "write", "sem"} {
		name := "live-" + kind
		qkey := "baton:{" + name + "}:queue"
		var take func(cl *rlock.Client) (context.Context, func(), error)
		switch kind {
		case "lock":
			take = func(cl *rlock.Client) (context.Context, func(), error) {
				l, err := cl.Lock(ctx, name)
				if err != nil {
					return nil, nil, err
				}
				return l.Context(), func() { l.Unlock(ctx) }, nil
			}
		case "write":
			qkey = "baton:{" + name + "}:rw:queue"
			take = func(cl *rlock.Client) (context.Context, func(), error) {
				l, err := cl.RWLock(name).Lock(ctx)
				if err != nil {
					return nil, nil, err
				}
				return l.Context(), func() { l.Unlock(ctx) }, nil
			}
		case "sem":
			qkey = "baton:{" + name + "}:sem:queue"
			take = func(cl *rlock.Client) (context.Context, func(), error) {
				p, err := cl.Semaphore(name, 1).Acquire(ctx, 1)
				if err != nil {
					return nil, nil, err
				}
				return p.Context(), func() { p.Release(ctx) }, nil
			}
		}
		_, rel, err := take(a)
		if err != nil {
			t.Fatal(err)
		}
		type got struct {
			ctx context.Context
			rel func()
			at  time.Time
		}
		bres := make(chan got, 1)
		go func() {
			hctx, r, err := take(b)
			if err != nil {
				t.Logf("%s: B: %v", kind, err)
			}
			bres <- got{hctx, r, time.Now()}
		}()
		atkWaitLen(t, rdb, qkey, 1)
		cres := make(chan got, 1)
		go func() {
			hctx, r, err := take(c)
			if err != nil {
				t.Error(err)
			}
			cres <- got{hctx, r, time.Now()}
		}()
		atkWaitLen(t, rdb, qkey, 2)
		time.Sleep(60 * time.Millisecond)
		prx.HoldRequests()
		time.Sleep(20 * time.Millisecond)
		rel()
		var bg got
		select {
		case bg = <-bres:
		case <-time.After(3 * time.Second):
			prx.ReleaseRequests()
			t.Fatalf("%s: B got nothing", kind)
		}
		cg := <-cres
		if bg.ctx != nil {
			if bg.ctx.Err() == nil {
				t.Errorf("%s: C holds (since %v after B's grant) while B's Context is alive", kind, cg.at.Sub(bg.at))
			} else {
				t.Logf("%s: B's Context ended (%v) before C held (%v after B's grant)", kind, context.Cause(bg.ctx), cg.at.Sub(bg.at))
			}
		}
		prx.ReleaseRequests()
		if bg.rel != nil {
			bg.rel()
		}
		cg.rel()
	}
}

// Wire mode: "a waiter subscribes to its lock's channel, and the last waiter
// of a lock in the process unsubscribes". After waits that end every way
// (granted, cancelled, WaitAtMost, Close), no subscription is left on the
// locks' channels.
func TestAttackWireSubscriptionsLeft(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	rdb := srv.Admin()
	a := atkClient(t, srv, rlock.WithRedissonWire(""))
	b := atkClient(t, srv, rlock.WithRedissonWire(""))
	cl, err := rlock.New(srv.Client(), rlock.WithRedissonWire(""))
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"wsub1", "wsub2", "wsub3", "wsub4"}
	var holds []*rlock.Lock
	for _, n := range names {
		l, err := a.Lock(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		holds = append(holds, l)
	}
	// wsub1: granted; wsub2: cancelled; wsub3: WaitAtMost; wsub4: Close.
	done := make(chan error, 4)
	go func() {
		l, err := b.Lock(ctx, "wsub1")
		if err == nil {
			err = l.Unlock(ctx)
		}
		done <- err
	}()
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	go func() { _, err := b.Lock(cctx, "wsub2"); done <- err }()
	go func() { _, err := b.TryLock(ctx, "wsub3", rlock.WaitAtMost(200*time.Millisecond)); done <- err }()
	go func() { _, err := cl.Lock(ctx, "wsub4"); done <- err }()
	time.Sleep(100 * time.Millisecond)
	holds[0].Unlock(ctx)
	time.Sleep(200 * time.Millisecond)
	cl.Close()
	for range 4 {
		t.Logf("waiter: %v", <-done)
	}
	for _, l := range holds[1:] {
		l.Unlock(ctx)
	}
	time.Sleep(300 * time.Millisecond)
	chans := rdb.PubSubChannels(ctx, "*").Val()
	for _, ch := range chans {
		if strings.Contains(ch, "wsub") {
			t.Errorf("channel %q still subscribed (%v)", ch, rdb.PubSubNumSub(ctx, ch).Val())
		}
	}
}

// Close racing a grant, the holder's side: when B's Lock returns a handle
// while B closes, that handle's Context must have ended by the time Close
// returns ("Close ... releases the locks this client still holds ... and
// ends their contexts with ErrClosed"): never a live handle of a lock that
// C can take.
func TestAttackCloseRacingGrantHandle(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	a, c := atkClient(t, srv), atkClient(t, srv)
	rdb := srv.Admin()
	got := 0
	for round := range 40 {
		name := "closehandle"
		b, err := rlock.New(srv.Client())
		if err != nil {
			t.Fatal(err)
		}
		l, err := a.Lock(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		bres := make(chan *rlock.Lock, 1)
		go func() {
			l, _ := b.Lock(ctx, name)
			bres <- l
		}()
		atkWaitLen(t, rdb, "baton:{"+name+"}:queue", 1)
		go l.Unlock(ctx)
		time.Sleep(time.Duration(round%10) * 30 * time.Microsecond)
		_ = b.Close()
		lb := <-bres
		if lb == nil {
			continue
		}
		got++
		if lb.Context().Err() == nil {
			if lc, err := c.TryLock(ctx, name, rlock.WaitAtMost(time.Second)); err == nil {
				lc.Unlock(ctx)
				t.Errorf("round %d: B's handle alive after Close while C took the lock", round)
			} else {
				t.Errorf("round %d: B's handle alive after Close (C could not take it: %v)", round, err)
			}
		}
		lb.Unlock(ctx)
	}
	t.Logf("B got a handle in %d of 40 rounds", got)
}

// A shared owner's late write grant, with D taking a read inside owner X's
// write meanwhile ("a read inside a write is granted at once"; after the
// write ends the read stays): the late grant's give-back ends the write
// only, and E's write must not get in beside D's read.
func TestAttackSharedOwnerLateGrantWriteThenRead(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	prx := atkStartProxy(t, srv.Addr)
	a, d, e := atkClient(t, srv), atkClient(t, srv), atkClient(t, srv)
	brdb := redis.NewClient(redistest.Options(prx.Addr()))
	t.Cleanup(func() { brdb.Close() })
	b, err := rlock.New(brdb)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	const name = "sharedlatewr"
	rdb := srv.Admin()
	l, err := a.RWLock(name).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	octx := rlock.WithOwner(ctx, "X")
	wctx, cancel := context.WithTimeout(octx, 3*time.Second)
	defer cancel()
	w1 := make(chan *rlock.Lock, 1)
	go func() {
		l, err := b.RWLock(name).Lock(wctx, rlock.WithLease(300*time.Millisecond))
		t.Logf("W1: %v", err)
		w1 <- l
	}()
	atkWaitLen(t, rdb, "baton:{"+name+"}:rw:queue", 1)
	time.Sleep(50 * time.Millisecond)
	prx.Hold()
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	ld, err := d.RWLock(name).TryRLock(octx)
	if err != nil {
		t.Fatalf("owner X re-entry on D after W1's grant: %v", err)
	}
	defer ld.Unlock(ctx)
	time.Sleep(700 * time.Millisecond)
	prx.Release()
	l1 := <-w1
	if l1 != nil {
		st, _ := a.RWLock(name).Inspect(ctx)
		t.Logf("W1 returned a handle (token %d, D's %d); state %+v", l1.Token(), ld.Token(), st)
		time.Sleep(100 * time.Millisecond)
		t.Logf("W1 unlock: %v", l1.Unlock(ctx))
	}
	st, _ := a.RWLock(name).Inspect(ctx)
	t.Logf("after W1: %+v", st)
	if le, err := e.RWLock(name).TryLock(ctx, rlock.WaitAtMost(500*time.Millisecond)); err == nil {
		le.Unlock(ctx)
		t.Errorf("E got the lock while D's hold of owner X is alive (%v)", ld.Context().Err())
	}
}
