package rlock

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// The oldest recorded waiter goes away around the release that wakes it.
//
// A holds on all 3 nodes; W1 then W2 (each its own Client, 60 s lease, so
// a periodic look is 20 s away) wait: both queued on node 0, recorded on
// nodes 1 and 2 (W1 the oldest record). Node 0 is paused (SIGSTOP) and A
// unlocks; at an offset around that Unlock, W1 goes: its ctx is cancelled,
// its WaitAtMost runs out, or its Client is closed. The release that frees
// nodes 1 and 2 wakes their oldest live record. If that is W1's, and W1
// is gone, W2 must still hear of it: README "Waiting": a waiter whose node
// pauses after its look still hears the releases of the others, granted
// within one wait for the paused node (6.1 s at most). The bound here is
// 9 s; a lost wake-up shows as 20 s (W2's periodic look).
//
// Found by an outside attack: "cancel 5ms after" (1 of 3 runs) and
// "WaitAtMost 2ms after" (1 of 8): W1 is woken, its look takes nodes 1
// and 2, it goes and gives them back, which woke nobody; nodes 1 and 2
// were free, W2's wake record still there, and W2 was granted only by its
// periodic look, 19 s after the release. A call that has left now gives
// back waking (see giveBackOn). "Close 2ms after" (6 of 6 runs) and
// "Close at" (1 of 5): W1's Lock, in a look, took nodes 1 and 2 under
// the closed Client's owner, and its give-back reached them only once
// paused node 0 had answered, 10 s later: once Close has begun a Client's
// clean-ups run on their caller's time, and they ran one after another,
// each until its node answered (go-redis ends no read at a ctx's
// deadline): node 0's first. W2 was granted 10–24 s after the release,
// and W1's Lock returned 15 s after it. They now run side by side, and
// the caller waits for them up to undoTimeout (see cleanups.runEach).
func TestAttackWakeOldestGoesAtRelease(t *testing.T) {
	for _, c := range []struct {
		name   string
		how    string
		offset time.Duration // of W1's going, from the start of A's Unlock
	}{
		{"cancel 20ms before", "cancel", -20 * time.Millisecond},
		{"cancel at", "cancel", 0},
		{"cancel 1ms after", "cancel", time.Millisecond},
		{"cancel 5ms after", "cancel", 5 * time.Millisecond},
		{"WaitAtMost at", "waitatmost", 0},
		{"WaitAtMost 2ms after", "waitatmost", 2 * time.Millisecond},
		{"Close before", "close", -20 * time.Millisecond},
		{"Close at", "close", 0},
		{"Close 2ms after", "close", 2 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) { wkOldestGoes(t, c.how, c.offset) })
	}
}

func wkOldestGoes(t *testing.T, how string, offset time.Duration) {
	ctx := testCtx(t)
	srvs := startNodes(t, 3)
	const name = "wk-oldest"
	la := lockOnAll(t, ctx, newQuorumClient(t, srvs), srvs, name)
	c1 := newQuorumClient(t, srvs, WithWatchdogLease(wkSlowLease))
	c2 := newQuorumClient(t, srvs, WithWatchdogLease(wkSlowLease))
	res := make(chan wkGot, 2)
	ctx1, cancel1 := context.WithCancel(ctx)
	defer cancel1()
	const w1Wait = 3 * time.Second
	w1Start := time.Now()
	if how == "waitatmost" {
		wkLock(ctx1, c1, name, 1, res, WaitAtMost(w1Wait))
	} else {
		wkLock(ctx1, c1, name, 1, res)
	}
	time.Sleep(800 * time.Millisecond) // W1's look has reached every node
	t.Logf("W1 waits: %s", wkLeft(ctx, srvs, name))
	wkLock(ctx, c2, name, 2, res)
	time.Sleep(800 * time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	t.Logf("before the pause: %s", wkLeft(ctx, srvs, name))
	srvs[0].Pause()
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			srvs[0].Resume()
		}
	}
	t.Cleanup(resume)

	closed := make(chan struct{})
	goW1 := func() {
		switch how {
		case "cancel":
			cancel1()
		case "close":
			go func() {
				defer close(closed)
				start := time.Now()
				err := c1.Close()
				t.Logf("W1's Client closed in %v: %v", time.Since(start), err)
			}()
		}
	}
	var unlockAt time.Time
	if how == "waitatmost" {
		unlockAt = w1Start.Add(w1Wait - offset)
		time.Sleep(time.Until(unlockAt))
	}
	unlocked := make(chan error, 1)
	if offset < 0 && how != "waitatmost" {
		goW1()
		time.Sleep(-offset)
	}
	unlockAt = time.Now()
	go func() { unlocked <- la.Unlock(ctx) }()
	if offset >= 0 && how != "waitatmost" {
		time.Sleep(offset)
		goW1()
	}

	// W1 granted as it went (allowed) is the holder; its release is then
	// the one W2 must hear.
	w1, w2, _ := wkAwaitSecond(t, ctx, srvs, name, res, unlockAt, 25*time.Second, func(g wkGot) {
		if la.Context().Err() == nil {
			t.Errorf("two holders: A's Context live as W1 is granted")
		}
		if err := g.l.Unlock(ctx); err != nil {
			t.Errorf("W1's Unlock: %v", err)
		}
	}, fmt.Sprintf("W1: %s at %v", how, offset))

	if w2.err == nil {
		t.Logf("W2's owner %s, token %d", w2.l.Owner(), w2.l.Token())
	}
	if w2.err != nil {
		t.Fatalf("W2: %v", w2.err)
	}
	if la.Context().Err() == nil {
		t.Errorf("two holders: A's Context live as W2 is granted")
	}
	if w1 != nil && w1.err == nil && w1.l.Context().Err() == nil {
		t.Errorf("two holders: W1 and W2 both live (tokens %d, %d)", w1.l.Token(), w2.l.Token())
	}
	if w1 != nil && w1.err == nil && w2.l.Token() <= w1.l.Token() {
		t.Errorf("W2's token %d not above W1's %d", w2.l.Token(), w1.l.Token())
	}
	if err := <-unlocked; err != nil {
		t.Errorf("A's Unlock: %v", err)
	}
	if w2.l.Token() <= la.Token() {
		t.Errorf("W2's token %d not above A's %d", w2.l.Token(), la.Token())
	}
	if err := w2.l.Unlock(ctx); err != nil {
		t.Errorf("W2's Unlock: %v", err)
	}
	if w1 == nil {
		select {
		case g := <-res:
			w1 = &g
			t.Logf("W1 returned %v after A's Unlock began: %v", g.at.Sub(unlockAt), g.err)
		case <-time.After(5 * time.Second):
			t.Fatalf("W1 (%s) has not returned", how)
		}
	}
	if w1.err == nil {
		if w1.l.Context().Err() == nil {
			if err := w1.l.Unlock(ctx); err != nil && !errors.Is(err, ErrClosed) {
				t.Errorf("W1's Unlock: %v", err)
			}
		}
	} else if !errors.Is(w1.err, ErrNotObtained) && !errors.Is(w1.err, ErrClosed) {
		t.Errorf("W1: %v", w1.err)
	}
	resume()
	if how == "close" {
		<-closed
	}
	requireNothingLeftOnNodes(t, ctx, srvs, name)
}
