package rlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/rlock"
)

// aqRequireClean waits up to 5 s for name to have nothing left on srvs.
func aqRequireClean(t *testing.T, srvs []*redistest.Server, name, when string) {
	t.Helper()
	ctx := atkCtx(t)
	deadline := time.Now().Add(5 * time.Second)
	for left := aqLeft(ctx, srvs, name); left != ""; left = aqLeft(ctx, srvs, name) {
		if time.Now().After(deadline) {
			t.Fatalf("5 s %s: %s", when, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Unlock with one node of 3 killed (connection refused, appendfsync
// always): nodes 0 and 1 release, a majority, so Unlock must return nil
// ("every call returns once a majority has decided it"). Then the node
// comes back with the hold it had; nothing may stay there.
func TestAtkQuorumUnlockWithNodeKilled(t *testing.T) {
	ctx := atkCtx(t)
	srvs := aqNodes(t, 3, redistest.AppendFsyncAlways...)
	a := aqQuorum(t, aqDirect(srvs))
	l, err := a.Lock(ctx, "killed")
	if err != nil {
		t.Fatal(err)
	}
	srvs[2].Kill()
	if err := l.Unlock(ctx); err != nil {
		t.Errorf("Unlock with 2 of 3 nodes up: %v (left on nodes 0, 1: %q)", err, aqLeft(ctx, srvs[:2], "killed"))
	}
	srvs[2].Relaunch()
	aqRequireClean(t, srvs, "killed", "after the killed node came back")
}

// Held: Lock and Unlock with one node paused (SIGSTOP) while the acquire
// and the release sent to it wait in its sockets: the paused node delays
// nothing, and whatever order it runs them in once resumed, nothing is
// left on any node.
func TestAtkQuorumUnlockWithNodePaused(t *testing.T) {
	aqPausedUnlock(t, false)
}

// The same through a re-entry of a hold taken with every node up.
func TestAtkQuorumReentryWithNodePaused(t *testing.T) {
	aqPausedUnlock(t, true)
}

func aqPausedUnlock(t *testing.T, reenter bool) {
	ctx := atkCtx(t)
	srvs := aqNodes(t, 3)
	a := aqQuorum(t, aqDirect(srvs))
	lctx := ctx
	var outer *rlock.Lock
	if reenter {
		var err error
		if outer, err = a.Lock(ctx, "paused"); err != nil {
			t.Fatal(err)
		}
		lctx = outer.Context()
	}
	srvs[2].Pause()
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			srvs[2].Resume()
		}
	})
	l, err := a.Lock(lctx, "paused")
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []*rlock.Lock{l, outer} {
		if h != nil {
			if err := h.Unlock(ctx); err != nil && !errors.Is(err, rlock.ErrNotHeld) {
				t.Fatal(err)
			}
		}
	}
	time.Sleep(200 * time.Millisecond)
	srvs[2].Resume()
	resumed = true
	aqRequireClean(t, srvs, "paused", "after the paused node resumed")
}

// A hold taken with every node up outlives one node paused (a minority),
// whichever node it is: "it goes on working while a minority is down or
// paused". For each node, a new hold is taken, the node is paused for two
// leases (its part of the hold runs out there), resumed, and the hold
// must still be alive. (A second pause of another node during the same
// hold ends it: a node that lost its part does not get it back; see
// "Quorum mode" in the README.)
func TestAtkQuorumHoldOutlivesMinorityPause(t *testing.T) {
	ctx := atkCtx(t)
	srvs := aqNodes(t, 3)
	lease := time.Second
	a := aqQuorum(t, aqDirect(srvs), rlock.WithWatchdogLease(lease))
	for i, s := range srvs {
		l, err := a.Lock(ctx, "minority")
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(lease / 3)
		spread := aqLeft(ctx, srvs, "minority")
		s.Pause()
		time.Sleep(2 * lease)
		s.Resume()
		if err := l.Context().Err(); err != nil {
			t.Fatalf("node %d paused %v ended the hold: %v; held 1/3 lease after Lock on: %s",
				i, 2*lease, context.Cause(l.Context()), spread)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		aqRequireClean(t, srvs, "minority", "after Unlock")
	}
}
