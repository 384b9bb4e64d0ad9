package rlock

import (
	"errors"
	"testing"
	"time"
)

// ForceUnlock while waiters are recorded, the node they wait on paused.
//
// A holds on all 3 nodes; W1 then W2 (60 s leases: a periodic look is
// 20 s away) wait, queued on node 0 and recorded past it. Node 0 is
// paused and another Client's ForceUnlock deletes the lock (API:
// "deletes the lock whoever holds it and wakes its waiters"). W1 must be
// granted within one wait for the paused node (README "Waiting", 6.1 s;
// bound 9 s), then W2 after W1's Unlock, tokens rising; nothing left.
//
// Found by an outside attack (4 of 4 runs): the ForceUnlock emptied nodes
// 1 and 2 (a majority) but woke no wake record there: both records
// stayed, and W1 was granted by its periodic look, 18.2–18.35 s later.
// A quorum ForceUnlock now wakes one (Keys.ForceReleaseWaking).
func TestAttackWakeForceUnlockWhileRecorded(t *testing.T) {
	ctx := testCtx(t)
	srvs := startNodes(t, 3)
	const name = "wk-force"
	la := lockOnAll(t, ctx, newQuorumClient(t, srvs), srvs, name)
	res := make(chan wkGot, 2)
	wkLock(ctx, newQuorumClient(t, srvs, WithWatchdogLease(wkSlowLease)), name, 1, res)
	time.Sleep(800 * time.Millisecond)
	wkLock(ctx, newQuorumClient(t, srvs, WithWatchdogLease(wkSlowLease)), name, 2, res)
	time.Sleep(800 * time.Millisecond)
	t.Logf("waiting: %s", wkLeft(ctx, srvs, name))
	srvs[0].Pause()
	t.Cleanup(srvs[0].Resume)
	from := time.Now()
	n, err := newQuorumClient(t, srvs).ForceUnlock(ctx, name)
	t.Logf("ForceUnlock: %d, %v, in %v", n, err, time.Since(from))
	if err != nil {
		t.Fatal(err)
	}
	var last *Lock
	lost := false
	for i := 0; i < 2; {
		bound := wkWakeBound
		if lost {
			bound = 22 * time.Second
		}
		select {
		case g := <-res:
			t.Logf("W%d granted %v after the release before it: %v", g.id, g.at.Sub(from), g.err)
			if g.err != nil {
				t.Fatal(g.err)
			}
			if last != nil && last.Context().Err() == nil {
				t.Errorf("two holders live at once")
			}
			if g.l.Token() <= la.Token() || (last != nil && g.l.Token() <= last.Token()) {
				t.Errorf("token %d does not rise", g.l.Token())
			}
			last = g.l
			if err := g.l.Unlock(ctx); err != nil {
				t.Errorf("W%d's Unlock: %v", g.id, err)
			}
			from = time.Now()
			lost = false
			i++
		case <-time.After(time.Until(from.Add(bound))):
			if lost {
				t.Fatalf("waiter %d of 2 still not granted 22 s after the release before it", i+1)
			}
			t.Errorf("lost wake-up: waiter %d of 2 not granted %v after the release before it, node 0 paused; nodes 1, 2 (shown as 0, 1): %s",
				i+1, wkWakeBound, wkLeft(ctx, srvs[1:], name))
			lost = true
		}
	}
	if err := la.Unlock(ctx); !errors.Is(err, ErrLockLost) {
		t.Errorf("A's Unlock after the ForceUnlock: %v", err)
	}
	srvs[0].Resume()
	requireNothingLeftOnNodes(t, ctx, srvs, name)
}

// Nodes restarted empty, one at a time, lose the wake records.
//
// A (1 s lease) holds on all 3 nodes; W (60 s lease: a periodic look is
// 20 s away) waits: queued on node 0, recorded past it. Node 1 is killed,
// kept out 1.5 s (more than A's lease: README "Assumptions": keep a node
// restarted without its data out for at least one lease) and relaunched
// empty; then node 2 the same. W's wake records are gone; A's hold is
// lost with node 2 (one node left), its Context ends. The lock is then
// free on nodes 1 and 2, a majority, and on node 0 once A's lease there
// ends. W must be granted within 5 s of node 2's relaunch (API: a waiter
// looks again when the holder's lease should have run out, and after a
// resync), and its Context must not be live with A's.
func TestAttackWakeNodesRestartedEmptyLoseRecords(t *testing.T) {
	ctx := testCtx(t)
	srvs := startNodes(t, 3)
	const name = "wk-restart"
	la := lockOnAll(t, ctx, newQuorumClient(t, srvs, WithWatchdogLease(time.Second)), srvs, name)
	res := make(chan wkGot, 1)
	wkLock(ctx, newQuorumClient(t, srvs, WithWatchdogLease(wkSlowLease)), name, 1, res)
	time.Sleep(800 * time.Millisecond)
	t.Logf("waiting: %s", wkLeft(ctx, srvs, name))
	for _, i := range []int{1, 2} {
		srvs[i].Kill()
		time.Sleep(1500 * time.Millisecond)
		srvs[i].Relaunch()
		t.Logf("node %d relaunched empty; A's Context: %v", i, la.Context().Err())
		if i == 1 {
			time.Sleep(1500 * time.Millisecond)
		}
	}
	from := time.Now()
	select {
	case g := <-res:
		t.Logf("W granted %v after node 2's relaunch: %v", time.Since(from), g.err)
		if g.err != nil {
			t.Fatal(g.err)
		}
		if la.Context().Err() == nil {
			t.Errorf("two holders: A's Context live as W is granted")
		}
		if g.l.Token() <= la.Token() {
			t.Errorf("W's token %d not above A's %d", g.l.Token(), la.Token())
		}
		if err := g.l.Unlock(ctx); err != nil {
			t.Errorf("W's Unlock: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("lost wake-up: W not granted 5 s after node 2's relaunch; A's Context %v: %s",
			la.Context().Err(), wkLeft(ctx, srvs, name))
	}
	_ = la.Unlock(ctx)
	requireNothingLeftOnNodes(t, ctx, srvs, name)
}
