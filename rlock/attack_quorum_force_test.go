package rlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonlock/baton/rlock"
)

// ForceUnlock by another Client while the holder's watchdog renews every
// 100 ms: no renewal in flight brings the deleted hold back (B takes the
// lock at once), B's token is above A's, and A finds out at its next
// renewal (its Context ends within the lease).
func TestAtkQuorumForceUnlockDuringRenewals(t *testing.T) {
	ctx := atkCtx(t)
	srvs := aqNodes(t, 3)
	lease := 300 * time.Millisecond
	a := aqQuorum(t, aqDirect(srvs), rlock.WithWatchdogLease(lease))
	b := aqQuorum(t, aqDirect(srvs), rlock.WithWatchdogLease(lease))
	for i := 0; i < 10; i++ {
		la, err := a.Lock(ctx, "forced")
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(i*17) * time.Millisecond % lease)
		if n, err := b.ForceUnlock(ctx, "forced"); err != nil || n != 1 {
			t.Fatalf("round %d: ForceUnlock = %d, %v", i, n, err)
		}
		lb, err := b.TryLock(ctx, "forced")
		if err != nil {
			t.Fatalf("round %d: B after the ForceUnlock: %v; left: %s", i, err, aqLeft(ctx, srvs, "forced"))
		}
		if lb.Token() <= la.Token() {
			t.Fatalf("round %d: B's token %d after A's %d", i, lb.Token(), la.Token())
		}
		select {
		case <-la.Context().Done():
		case <-time.After(lease):
			t.Fatalf("round %d: A's Context live a lease after the ForceUnlock", i)
		}
		if err := la.Unlock(ctx); !errors.Is(err, rlock.ErrLockLost) {
			t.Fatalf("round %d: A's Unlock: %v (cause %v)", i, err, context.Cause(la.Context()))
		}
		if err := lb.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	aqRequireClean(t, srvs, "forced", "after the last Unlock")
}
