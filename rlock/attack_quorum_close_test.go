package rlock_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/batonlock/baton/rlock"
)

// A waiter's Client closes while it waits: its Lock returns ErrClosed and
// has left every node's queue; once the holder unlocks, nothing is left,
// and no clean-up outlives Close (goleak in TestMain).
func TestAtkQuorumCloseWhileWaiting(t *testing.T) {
	ctx := atkCtx(t)
	srvs := aqNodes(t, 3)
	a := aqQuorum(t, aqDirect(srvs))
	la, err := a.Lock(ctx, "closing")
	if err != nil {
		t.Fatal(err)
	}
	w, err := rlock.NewQuorum(aqDirect(srvs))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := w.Lock(ctx, "closing")
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, rlock.ErrClosed) {
			t.Fatalf("waiter's Lock after Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiter's Lock still waiting 5 s after Close")
	}
	if err := la.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	aqRequireClean(t, srvs, "closing", "after the waiter's Client closed and the holder unlocked")
}

// A quorum Client is closed 0-6 ms into a Lock of a free lock (even
// rounds) or of one another Client holds (odd rounds), every node up: the
// Lock is granted or fails matching ErrClosed, as Close promises every
// waiting Lock call; and nothing is left. Before, a Lock closed as it
// subscribed failed with ErrNoQuorum naming no node, in 13-18 rounds of
// 60 (outside attack 6; all rounds where the lock was held elsewhere).
// The same on one node gave ErrClosed 60 times of 60.
func TestAttackQuorumCloseMidLockIsErrClosed(t *testing.T) {
	ctx := atkCtx(t)
	srvs := aqNodes(t, 3)
	other := aqQuorum(t, aqDirect(srvs))
	for i := range 60 {
		name := fmt.Sprint("mid", i)
		var held *rlock.Lock
		if i%2 == 1 {
			var err error
			if held, err = other.Lock(ctx, name); err != nil {
				t.Fatal(err)
			}
		}
		c, err := rlock.NewQuorum(aqDirect(srvs))
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			l, err := c.Lock(ctx, name)
			if err == nil {
				if err = l.Unlock(ctx); errors.Is(err, rlock.ErrClosed) {
					err = nil
				}
			}
			done <- err
		}()
		in := time.Duration(i/2) * 200 * time.Microsecond
		time.Sleep(in)
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case err = <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: Lock still running 5 s after Close", i)
		}
		if err != nil && !errors.Is(err, rlock.ErrClosed) {
			t.Errorf("round %d (lock held elsewhere: %v), Close %v into the Lock: %v", i, held != nil, in, err)
		}
		if held != nil {
			if err := held.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		}
		aqRequireClean(t, srvs, name, fmt.Sprintf("round %d, after the calls", i))
	}
}

// One Lock of a quorum Client C waits behind another Client's hold with
// node 0 of 3 paused, and C is closed 150 ms into the Lock (its first look
// still waiting for node 0) or 7 s into it (past that one wait, 6 s at
// most: the call waits only for a message). Close wakes every waiting Lock
// with ErrClosed, and a call under way waits for its clean-ups up to a
// second: so the Lock returns ErrClosed within what is left of one wait for
// the paused node (6 s at most), that second, and 2 s for a loaded machine,
// counted from the start of Close (outside attack 7: it returned only as
// Close did, 5–11 s in, 4 of 4 runs; the nodes' hubs, where a quorum
// waiter waits, were closed last).
func TestAttackQuorumCloseWaiterNodePaused(t *testing.T) {
	for _, after := range []time.Duration{150 * time.Millisecond, 7 * time.Second} {
		t.Run(fmt.Sprint("Close ", after, " into the Lock"), func(t *testing.T) {
			ctx := atkCtx(t)
			srvs := aqNodes(t, 3)
			h := aqQuorum(t, aqDirect(srvs))
			hx, err := h.Lock(ctx, "x")
			if err != nil {
				t.Fatal(err)
			}
			c, err := rlock.NewQuorum(aqDirect(srvs))
			if err != nil {
				t.Fatal(err)
			}
			srvs[0].Pause()
			resumed := false
			t.Cleanup(func() {
				if !resumed {
					srvs[0].Resume()
				}
			})
			const lease = 3 * time.Second
			done := make(chan error, 1)
			go func() {
				_, err := c.Lock(ctx, "x", rlock.WithLease(lease))
				done <- err
			}()
			time.Sleep(after)
			start := time.Now()
			closeDone := make(chan time.Duration, 1)
			go func() { c.Close(); closeDone <- time.Since(start) }()
			bound := 9 * time.Second
			if after > 6*time.Second {
				bound = 3 * time.Second
			}
			select {
			case err = <-done:
				if !errors.Is(err, rlock.ErrClosed) {
					t.Errorf("waiting Lock after Close: %v, want ErrClosed", err)
				}
				if w := time.Since(start); w > bound {
					t.Errorf("waiting Lock returned %v after Close began, node 0 paused: want at most %v", w, bound)
				} else {
					t.Logf("waiting Lock returned %v after Close began", w)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("waiting Lock still running 20 s after Close began")
			}
			t.Logf("Close took %v", <-closeDone)
			srvs[0].Resume()
			resumed = true
			if err := hx.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			time.Sleep(lease + 500*time.Millisecond)
			aqRequireClean(t, srvs, "x", "after node 0 came back and the holder unlocked")
		})
	}
}
