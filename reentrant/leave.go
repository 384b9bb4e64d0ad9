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
// AcquireNew) queued it for owner and lease. If w was granted the lock
// meanwhile, it passes the lock on to the next live waiter before it
// returns (see handOn), and reports true. Repeating it is harmless.
func (k Keys) Leave(ctx context.Context, rdb redis.Scripter, w Waiter, owner string, lease time.Duration, newOwner bool) (bool, error) {
	ms, err := leaseMillis(lease)
	if err != nil {
		return false, err
	}
	shared := "1"
	if newOwner {
		shared = "0"
	}
	keys := []string{k.Hash, k.Fence, k.Queue, k.Granted}
	n, err := leaveScript.Run(ctx, rdb, keys, w.ID, owner, k.publish, w.record(owner, ms, k.aliveTTL.Milliseconds(), !newOwner), shared).Int64()
	if err != nil {
		return false, fmt.Errorf("reentrant: leave %q: %w", k.Name, err)
	}
	if n == 2 {
		k.handOn(ctx, rdb)
	}
	return n > 0, nil
}
