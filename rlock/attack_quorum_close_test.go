package rlock_test

import (
	"errors"
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
