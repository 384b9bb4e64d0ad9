package rlock

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"
)

// A chain of recorded waiters, some leaving as the lock passes.
//
// A holds on all 3 nodes; 6 waiters (each its own Client, 60 s lease: a
// periodic look is 20 s away) wait; node 0, the node they wait on, is
// paused; A unlocks. Each holder in turn holds 1 ms and unlocks; as each
// release is sent, the ctx of one of the waiters still waiting (at random)
// is cancelled 0–3 ms later, for the first three releases. Every waiter
// left must be granted, each within one wait for the paused node of the
// release before it (README "Waiting": a waiter whose node pauses after
// its look still hears the releases of the others; 6.1 s; bound 9 s), no
// two holders live at once, tokens rising; nothing left after.
//
// Found by an outside attack (1 of 7 runs): a waiter left with its wake
// record on a free majority, granted by no release, as in
// TestAttackWakeOldestGoesAtRelease: a leaver's give-back woke nobody.
func TestAttackWakeChainWithLeavers(t *testing.T) {
	ctx := testCtx(t)
	srvs := startNodes(t, 3)
	const name = "wk-chain"
	la := lockOnAll(t, ctx, newQuorumClient(t, srvs), srvs, name)
	const n = 6
	res := make(chan wkGot, n)
	cancels := make([]context.CancelFunc, n)
	for i := range n {
		cctx, cancel := context.WithCancel(ctx)
		cancels[i] = cancel
		defer cancel()
		wkLock(cctx, newQuorumClient(t, srvs, WithWatchdogLease(wkSlowLease)), name, i, res)
		time.Sleep(150 * time.Millisecond)
	}
	time.Sleep(600 * time.Millisecond)
	srvs[0].Pause()
	t.Cleanup(srvs[0].Resume)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	waiting := map[int]bool{}
	for i := range n {
		waiting[i] = true
	}
	leaves := 0
	release := func(l *Lock) time.Time {
		at := time.Now()
		done := make(chan error, 1)
		go func() { done <- l.Unlock(ctx) }()
		if leaves < 3 {
			var ids []int
			for id := range waiting {
				ids = append(ids, id)
			}
			if len(ids) > 0 {
				id := ids[r.IntN(len(ids))]
				time.Sleep(time.Duration(r.IntN(3000)) * time.Microsecond)
				cancels[id]()
				leaves++
				t.Logf("waiter %d's ctx cancelled %v after the release", id, time.Since(at))
			}
		}
		if err := <-done; err != nil {
			t.Errorf("Unlock: %v", err)
		}
		return at
	}
	from := release(la)
	last := la
	lost := false
	for len(waiting) > 0 {
		bound := wkWakeBound
		if lost {
			bound = 22 * time.Second
		}
		select {
		case g := <-res:
			delete(waiting, g.id)
			t.Logf("waiter %d returned %v after the release before it: %v", g.id, g.at.Sub(from), g.err)
			if g.err != nil {
				continue // it left
			}
			if last.Context().Err() == nil {
				t.Errorf("two holders live at once: tokens %d, %d", last.Token(), g.l.Token())
			}
			if g.l.Token() <= last.Token() {
				t.Errorf("token %d after %d", g.l.Token(), last.Token())
			}
			last = g.l
			time.Sleep(time.Millisecond)
			from = release(g.l)
			lost = false
		case <-time.After(time.Until(from.Add(bound))):
			if lost {
				t.Fatalf("%d waiters still not granted 22 s after the release before it", len(waiting))
			}
			t.Errorf("lost wake-up: %d waiters left, none granted %v after the release before it, node 0 paused; nodes 1, 2 (shown as 0, 1): %s",
				len(waiting), wkWakeBound, wkLeft(ctx, srvs[1:], name))
			lost = true
		}
	}
	srvs[0].Resume()
	requireNothingLeftOnNodes(t, ctx, srvs, name)
}
