package rlock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/rlock"
)

// appendfsync always, each node restarted in turn while A holds: B never
// takes the lock beside A (a restarted node keeps A's hold), A's hold
// lives on, and B's token after A's Unlock is above A's.
func TestAtkQuorumAOFRestartsWhileHeld(t *testing.T) {
	ctx := atkCtx(t)
	srvs := aqNodes(t, 3, redistest.AppendFsyncAlways...)
	lease := 2 * time.Second
	a := aqQuorum(t, aqDirect(srvs), rlock.WithWatchdogLease(lease))
	b := aqQuorum(t, aqDirect(srvs), rlock.WithWatchdogLease(lease))
	la, err := a.Lock(ctx, "aof")
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range srvs {
		s.Restart()
		for try := 0; try < 3; try++ { // the first tries may meet broken connections
			lb, err := b.TryLock(ctx, "aof")
			if err == nil {
				t.Fatalf("node %d restarted: B took the lock (token %d) beside A (token %d, Context %v)",
					i, lb.Token(), la.Token(), la.Context().Err())
			}
			if !errors.Is(err, rlock.ErrNotObtained) && !errors.Is(err, rlock.ErrNoQuorum) {
				t.Logf("node %d restarted, B try %d: %v", i, try, err)
			}
		}
		time.Sleep(lease / 2)
		if err := la.Context().Err(); err != nil {
			t.Fatalf("node %d restarted with its data: A's hold ended: %v", i, err)
		}
	}
	if err := la.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	lb, err := b.Lock(ctx, "aof")
	if err != nil {
		t.Fatal(err)
	}
	if lb.Token() <= la.Token() {
		t.Fatalf("B's token %d after A's %d", lb.Token(), la.Token())
	}
	if err := lb.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	aqRequireClean(t, srvs, "aof", "after the last Unlock")
}
