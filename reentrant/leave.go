package reentrant

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// leaveScript runs lua/leave.lua.
var leaveScript = grantingScript("leave.lua")

// Leave takes waiter w out of the queue, where Acquire (or, with newOwner,
// AcquireNew) queued it for owner and lease, and out of the wake records
// (see Waiter.Unqueued); where it had neither and the lock is free, a
// wake-up it may have taken goes on to another waiter. If w was granted the lock
// meanwhile and no look has claimed the grant, it gives back the one count
// the grant gave, passing the lock on to the next live waiter if that was
// the last (see handOn), and reports true. Repeating it is harmless: the
// count goes back once, and never another call's count of the owner.
func (k Keys) Leave(ctx context.Context, rdb redis.Scripter, w Waiter, owner string, lease time.Duration, newOwner bool) (bool, error) {
	ms, err := leaseMillis(lease)
	if err != nil {
		return false, err
	}
	keys := []string{k.Hash, k.Fence, k.Queue, k.Granted, k.Wake}
	record := w.record(owner, ms, k.aliveTTL.Milliseconds(), !newOwner)
	n, err := leaveScript.Run(ctx, rdb, keys, owner, w.ID, record, k.publish).Int64()
	if err != nil {
		return false, fmt.Errorf("reentrant: leave %q: %w", k.Name, err)
	}
	if n == 2 {
		k.handOn(ctx, rdb)
	}
	return n > 0, nil
}
