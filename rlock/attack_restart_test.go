package rlock_test

// Attacks from the outside (public API and bench/redistest only), issue 30
// follow-up. Each test names the README promise it checks. Helpers in
// attack_helpers_test.go.

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/rlock"
)

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
	hctx, _, err := atkHold(c, ctx, kind, name)
	return hctx, err
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
	cl := atkUnclosed(t, srv, rlock.WithRedissonWire(""))
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
