package rlock_test

// Attacks on replica acknowledgements from the outside, issue 31: what a
// Client leaves behind when it closes during acknowledgement waits.
// Helpers in attack_acks_test.go and attack_helpers_test.go.

import (
	"context"
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
