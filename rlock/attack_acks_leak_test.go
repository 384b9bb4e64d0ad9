package rlock_test

// Attacks on replica acknowledgements from the outside, issue 31: what a
// Client leaves behind when it closes during acknowledgement waits.
// Helpers in attack_acks_test.go and attack_helpers_test.go.

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/rlock"
)

// "Close ... stops the watchdog, releases the locks this client still
// holds ... It also waits for the clean-ups still going on in the
// background ... then cancels those left." A Client with a 600 ms
// watchdog lease holds a lock, a read and permits (acknowledged), then its
// replica stops: its renewals, a free acquire, a hand-off grant and a
// cancelled waiter all wait for acknowledgements that never come, and
// their give-backs follow. Close must return, every call must return, no
// goroutine of the Client may be left once Close has returned, and nothing
// may stay held.
func TestAttackAcksCloseLeavesNothing(t *testing.T) {
	ctx := atkCtx(t)
	srv, replica := atkReplicated(t)
	h, c := atkUnacked(t, srv), atkUnacked(t, srv)
	rdb := redis.NewClient(redistest.Options(srv.Addr))
	defer rdb.Close()
	ignore := []goleak.Option{goleak.IgnoreCurrent()}
	a, err := rlock.New(rdb, rlock.WithReplicaAcks(1, atkAckTimeout), rlock.WithWatchdogLease(600*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"lock", "read", "sem"} {
		if _, _, err := atkHold(a, ctx, k, "held-"+k); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}
	_, release, err := atkHold(h, ctx, "lock", "handed")
	if err != nil {
		t.Fatal(err)
	}
	calls := make(chan error, 3)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, call := range []struct {
		ctx  context.Context
		name string
	}{{ctx, "handed"}, {cctx, "handed"}} {
		go func() {
			l, err := a.Lock(call.ctx, call.name)
			if l != nil {
				_ = l.Unlock(ctx)
			}
			calls <- err
		}()
	}
	atkWaitLen(t, srv.Admin(), atkQueue("lock", "handed"), 2)
	atkPause(t, replica)
	go func() {
		l, err := a.Lock(ctx, "free")
		if l != nil {
			_ = l.Unlock(ctx)
		}
		calls <- err
	}()
	if err := release(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // grants and renewals wait for their acknowledgements
	cancel()
	closed := make(chan error, 1)
	go func() { closed <- a.Close() }()
	select {
	case err := <-closed:
		t.Logf("Close: %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("Close did not return within 15 s")
	}
	for range 3 {
		select {
		case err := <-calls:
			if err == nil {
				t.Error("a Lock call returned a handle across Close")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a Lock call did not return after Close")
		}
	}
	goleak.VerifyNone(t, ignore...)
	for _, n := range []string{"held-lock", "handed", "free"} {
		atkBystanderGetsIn(t, ctx, c, n, "Close")
	}
	if w, err := c.RWLock("held-read").TryLock(ctx, rlock.WaitAtMost(500*time.Millisecond)); err != nil {
		t.Errorf("after Close the read is still held: %v", err)
	} else {
		_ = w.Unlock(ctx)
	}
	if p, err := c.Semaphore("held-sem", 1).TryAcquire(ctx, 1, rlock.WaitAtMost(500*time.Millisecond)); err != nil {
		t.Errorf("after Close the permit is still held: %v", err)
	} else {
		_ = p.Release(ctx)
	}
}

// "Acquired: a Lock or TryLock call returned a lock", and WaitEnded's
// outcome is WaitAcquired only "when acquired". A free acquire and a
// hand-off grant that no replica acknowledges return no lock: the
// observer must hear of no acquisition, and the hand-off's wait must not
// end as acquired.
func TestAttackAcksObserverHearsNoUnacknowledgedGrant(t *testing.T) {
	ctx := atkCtx(t)
	srv, replica := atkReplicated(t)
	var mu sync.Mutex
	var acquired []rlock.Acquire
	var ended []rlock.WaitEnd
	a := atkAcked(t, srv, rlock.WithObserver(rlock.Observer{
		Acquired:  func(e rlock.Acquire) { mu.Lock(); acquired = append(acquired, e); mu.Unlock() },
		WaitEnded: func(e rlock.WaitEnd) { mu.Lock(); ended = append(ended, e); mu.Unlock() },
	}))
	h := atkUnacked(t, srv)
	l, err := h.Lock(ctx, "handed")
	if err != nil {
		t.Fatal(err)
	}
	got := atkTakeInBackground(ctx, a, "lock", "handed")
	atkWaitLen(t, srv.Admin(), atkQueue("lock", "handed"), 1)
	atkPause(t, replica)
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	atkRequireNotReplicated(t, "the hand-off", atkAwaitTaken(t, got, "the hand-off").err)
	_, err = a.Lock(ctx, "free")
	atkRequireNotReplicated(t, "the free acquire", err)
	mu.Lock()
	defer mu.Unlock()
	if len(acquired) > 0 {
		t.Errorf("the observer heard of %d acquisitions that returned no lock: %+v", len(acquired), acquired)
	}
	for _, e := range ended {
		if e.Outcome == rlock.WaitAcquired {
			t.Errorf("a wait that returned no lock ended as acquired: %+v", e)
		}
	}
}
