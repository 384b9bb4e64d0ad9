package reentrant

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// forceReleaseScript runs lua/force_release.lua.
var forceReleaseScript = grantingScript("replay.lua", "force_release.lua")

// ForceRelease deletes the lock whoever holds it and grants it to the
// oldest live waiter, if any, before it returns (see handOn). It returns
// the token of the hold it deleted, or 0 when the lock was free.
// requestID must be unique per force release: a repeated call with the
// same ID (go-redis resends one whose reply was lost) replays the first
// result, rather than deleting the hold its first run granted.
func (k Keys) ForceRelease(ctx context.Context, rdb redis.Scripter, requestID string) (uint64, error) {
	return k.forceRelease(ctx, rdb, 0, requestID, false)
}

// ForceReleaseWaking is ForceRelease in quorum mode, of the hold whose ID
// is hold (as Inspect's LastToken gives it while the lock is held): it
// deletes nothing, and returns 0, where another hold has replaced that
// one, so a copy that runs late (held on the network past its caller's
// return, when the caller's majority had decided) never ends a later
// hold. Where it leaves the lock free (nobody queued to grant), it also
// wakes one waiter of the wake records, the oldest live one, as
// ReleaseWaking does.
func (k Keys) ForceReleaseWaking(ctx context.Context, rdb redis.Scripter, hold uint64, requestID string) (uint64, error) {
	return k.forceRelease(ctx, rdb, hold, requestID, true)
}

// forceRelease runs lua/force_release.lua for ForceRelease (hold 0: any)
// and, with the wake records (wake), for ForceReleaseWaking.
func (k Keys) forceRelease(ctx context.Context, rdb redis.Scripter, hold uint64, requestID string, wake bool) (uint64, error) {
	keys := []string{k.Hash, k.Fence, k.Queue, k.Granted, k.RequestKey(requestID)}
	if wake {
		keys = append(keys, k.Wake)
	}
	reply, err := forceReleaseScript.Run(ctx, rdb, keys, k.publish, k.requestTTL.Milliseconds(), hold).Int64Slice()
	if err != nil {
		return 0, fmt.Errorf("reentrant: force-release %q: %w", k.Name, err)
	}
	if len(reply) != 2 {
		return 0, fmt.Errorf("reentrant: force-release %q: unexpected reply %v", k.Name, reply)
	}
	if reply[1] == 1 {
		k.handOn(ctx, rdb)
	}
	return uint64(reply[0]), nil
}
