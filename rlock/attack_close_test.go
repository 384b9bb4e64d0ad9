package rlock_test

// Attacks from the outside (public API and bench/redistest only), issue 30
// follow-up. Each test names the README promise it checks. Helpers in
// attack_helpers_test.go.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/rlock"
)

// Close while waiting: "Close wakes every waiting Lock call with ErrClosed",
// and "a call that gave up has left the queue when it returns". A Lock
// ended by Close must leave no queue entry behind (plain, RW, semaphore).
func TestAttackCloseWhileWaitingLeavesQueue(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	a := atkClient(t, srv)
	rdb := srv.Admin()
	b := atkUnclosed(t, srv)
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
			b := atkUnclosed(t, srv)
			qkey := atkQueue(kind, name)
			take := func(cl *rlock.Client, ctx context.Context) (func(), error) {
				_, end, err := atkHold(cl, ctx, kind, name)
				if err != nil {
					return nil, err
				}
				return func() { end() }, nil
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
		a := atkUnclosed(t, srv, opts...)
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
		b := atkUnclosed(t, srv)
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
