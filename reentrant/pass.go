package reentrant

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// passScript runs lua/pass.lua.
var passScript = grantingScript("pass.lua")

// drainPasses bounds the script runs one call spends getting a free lock's
// queue past entries that no longer listen. Each run drops up to 16 of them
// (grantTries in grant.lua, which bounds how long one script blocks the
// server), so one call gets through 1024 before it gives up; what is left,
// the next call goes on with (a waiter's look, or a TryLock).
const drainPasses = 64

// handOn goes on with a grant that a release, a leave or a force-release
// had no tries left for: the lock is free, and live waiters may still be
// queued behind the dead entries. It runs pass.lua until the lock is
// granted or taken, the queue is empty, or drainPasses runs are done, in
// this call: the package starts no goroutines, and the next holder should
// not wait for its next look to find out.
//
// It reports nothing. The call that freed the lock has done what it was
// asked; an error here, ctx ending, or the bound leaves the lock free with
// its queue, as a lease that runs out does, and the waiters' looks (at most
// a third of their lease apart) grant it then.
func (k Keys) handOn(ctx context.Context, rdb redis.Scripter) {
	keys := []string{k.Hash, k.Fence, k.Queue, k.Granted}
	for range drainPasses {
		left, err := passScript.Run(ctx, rdb, keys, k.publish).Int64()
		if err != nil || left == 0 {
			return
		}
	}
}
