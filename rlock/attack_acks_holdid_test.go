package rlock_test

// Attacks on hold IDs from the outside, issue 31: a hold lost with Redis's
// data, and the same owner's next hold. Helpers in attack_acks_test.go and
// attack_helpers_test.go.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/rlock"
)

// "Every hold of an RW lock or a semaphore therefore also has a hold ID of
// its own, and every release, renewal and re-entry acts on a hold only
// under it: a handle of a read whose lease ran out can never release,
// renew or re-enter the same owner's next read, on the same client or
// another." A's read (owner X) is lost when Redis restarts without its
// data (A has never waited, so no reconnect check cuts it off at once);
// B then reads as owner X on the fresh Redis. A's Unlock must not end B's
// read: while B's read is alive, a write stays out.
func TestAttackAcksHoldIDAcrossARestart(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	a, b, c := atkClient(t, srv), atkClient(t, srv), atkClient(t, srv)
	const name = "ids"
	octx := rlock.WithOwner(ctx, "X")
	ra, err := a.RWLock(name).RLock(octx)
	if err != nil {
		t.Fatal(err)
	}
	srv.Restart()
	var rb *rlock.Lock
	atkAwait(t, "B reads on the restarted Redis", func() bool {
		rb, err = b.RWLock(name).RLock(octx)
		return err == nil
	})
	defer rb.Unlock(ctx)
	// A's hold ID is gone with the restart: its Unlock finds nothing of its
	// own to release, whatever B holds as X.
	if err := ra.Unlock(ctx); !errors.Is(err, rlock.ErrLockLost) {
		t.Errorf("A's Unlock of its lost read: got %v, want ErrLockLost", err)
	}
	if w, err := c.RWLock(name).TryLock(ctx, rlock.WaitAtMost(500*time.Millisecond)); err == nil {
		_ = w.Unlock(ctx)
		t.Fatalf("two holders: a write got in beside B's read (B alive: %v): A's stale Unlock ended it", rb.Context().Err() == nil)
	}
	if err := rb.Context().Err(); err != nil {
		t.Fatalf("B's read ended: %v", context.Cause(rb.Context()))
	}
}
