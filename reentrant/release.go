package reentrant

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// releaseScript runs lua/release.lua, and lua/release_pass.lua when the
// last hold hands the lock on to a queue (see freePathScript).
var releaseScript = freePathScript([]string{"release_hold.lua", "release.lua"}, "release_pass.lua")

// ReleaseStatus says what a release did.
type ReleaseStatus int

const (
	// NotHeld: the owner did not hold the lock; nothing changed.
	NotHeld ReleaseStatus = iota
	// StillHeld: one hold was left; the owner still holds the lock.
	StillHeld
	// Released: the last hold was left; the lock went to the oldest live
	// waiter (the grant published to it), or, with none, was deleted.
	Released
)

// String names the status.
func (s ReleaseStatus) String() string {
	switch s {
	case NotHeld:
		return "not held"
	case StillHeld:
		return "still held"
	case Released:
		return "released"
	}
	return "ReleaseStatus(" + strconv.Itoa(int(s)) + ")"
}

// ReleaseResult is the outcome of one release.
type ReleaseResult struct {
	// Status says what the release did.
	Status ReleaseStatus
	// Remaining is the owner's hold count after the call.
	Remaining int64
}

// Release leaves one of owner's holds under token, and reports NotHeld,
// changing nothing, when owner does not hold the lock under that token.
// The lease is left as it is. The release of the last hold grants the lock
// to the oldest live waiter, if any, before it returns (see handOn).
// requestID must be unique per release: a repeated call with the same ID
// replays the first result.
func (k Keys) Release(ctx context.Context, rdb redis.Scripter, owner string, token uint64, requestID string) (ReleaseResult, error) {
	return k.release(ctx, rdb, owner, token, requestID, false)
}

// ReleaseWaking is Release for a hold's own release in quorum mode: where
// the last hold's release leaves the lock free (nobody queued to grant),
// it also wakes one waiter of the wake records, the oldest live one (see
// Waiter.Unqueued). A give-back of a grant that a look could not keep,
// by a call still waiting, is a Release, and wakes nobody: the waiters it
// would wake looked no later than the look that gives back, and one woken
// would give the lock back again in turn, waking the next (see the
// package doc's Quorum mode). A call that has left gives back by
// ReleaseWaking: its grant may have come from a wake-up, which it passes
// on so.
func (k Keys) ReleaseWaking(ctx context.Context, rdb redis.Scripter, owner string, token uint64, requestID string) (ReleaseResult, error) {
	return k.release(ctx, rdb, owner, token, requestID, true)
}

// release runs release.lua for Release and, with the wake records (wake),
// for ReleaseWaking.
func (k Keys) release(ctx context.Context, rdb redis.Scripter, owner string, token uint64, requestID string, wake bool) (ReleaseResult, error) {
	keys := []string{k.Hash, k.Fence, k.RequestKey(requestID), k.Queue, k.Granted}
	if wake {
		keys = append(keys, k.Wake)
	}
	n, err := releaseScript.Run(ctx, rdb, keys, owner, formatToken(token), k.requestTTL.Milliseconds(), k.publish).Int64()
	if err != nil {
		return ReleaseResult{}, fmt.Errorf("reentrant: release %q: %w", k.Name, err)
	}
	if n == -2 {
		k.handOn(ctx, rdb)
	}
	return parseReleaseReply(n), nil
}

// parseReleaseReply reads the reply of a release script (release.lua,
// shared_release.lua): the count left, -1 for not held, -2 for released
// with a pass to run.
func parseReleaseReply(n int64) ReleaseResult {
	switch {
	case n == -2, n == 0:
		return ReleaseResult{Status: Released}
	case n < 0:
		return ReleaseResult{Status: NotHeld}
	}
	return ReleaseResult{Status: StillHeld, Remaining: n}
}
