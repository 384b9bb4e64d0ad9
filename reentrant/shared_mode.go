package reentrant

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// The scripts of a shared mode: lua/shared_*.lua.
var (
	sharedAcquireScript = sharedScript("shared_acquire.lua")
	sharedReleaseScript = sharedScript("shared_release.lua")
	sharedLeaveScript   = sharedScript("shared_leave.lua")
)

// Acquire takes the mode for owner, or re-enters owner's hold in the
// mode, as Keys.Acquire does for a lock: the same replay and
// waiter rules, and no call takes past a queue. A non-zero hold re-enters
// only the hold of that ID (AcquireResult.HoldID), as a lock's token does. A read by an owner
// that holds the write is granted at once, past the queue, with the
// write's token. The call is refused, writing nothing, when the mode's
// weight is above the size (ErrInvalidPermits), and an owner holding
// permits already is refused (ErrPermitsHeld). When the mode does not fit
// (or others queue before it), HolderTTL is how long until the first
// hold's lease runs out (negative for none), when a waiter should look.
func (s SharedMode) Acquire(ctx context.Context, rdb redis.Scripter, owner, requestID string, lease time.Duration, hold uint64, w Waiter) (AcquireResult, error) {
	return s.acquire(ctx, rdb, owner, requestID, lease, false, hold, w)
}

// AcquireNew takes the mode for an owner made for this one call (see
// Keys.AcquireNew): a hold it already has can only be this call's own, so
// it is reported instead of counted again, and no request key is needed.
func (s SharedMode) AcquireNew(ctx context.Context, rdb redis.Scripter, owner string, lease time.Duration, w Waiter) (AcquireResult, error) {
	return s.acquire(ctx, rdb, owner, "", lease, true, 0, w)
}

// acquire runs shared_acquire.lua for Acquire and AcquireNew, until
// drained (untilDrained).
func (s SharedMode) acquire(ctx context.Context, rdb redis.Scripter, owner, requestID string, lease time.Duration, newOwner bool, hold uint64, w Waiter) (AcquireResult, error) {
	ms, err := leaseMillis(lease)
	if err != nil {
		return AcquireResult{}, err
	}
	k := s.keys
	var record string
	aliveMs := k.lock.aliveTTL.Milliseconds()
	if w.ID != "" {
		record = w.sharedRecord(s.mode, s.weight, owner, ms, aliveMs, !newOwner)
	}
	keys := k.keys(k.HoldIDs, k.RequestKey(requestID))
	args := []any{owner, formatToken(hold), string(s.mode), s.weight, k.size, ms, wireFlag(newOwner),
		k.lock.requestTTL.Milliseconds(), w.ID, record, w.Alive, aliveMs, k.lock.publish}
	return untilDrained(func() (AcquireResult, error) { return s.acquireOnce(ctx, rdb, keys, args) })
}

// acquireOnce runs the acquire script once and reads its reply.
func (s SharedMode) acquireOnce(ctx context.Context, rdb redis.Scripter, keys []string, args []any) (AcquireResult, error) {
	reply, err := sharedAcquireScript.Run(ctx, rdb, keys, args...).Int64Slice()
	if err != nil {
		return AcquireResult{}, fmt.Errorf("reentrant: acquire %s %q: %w", s.keys.Kind, s.keys.Name, err)
	}
	switch {
	case len(reply) == 2 && reply[0] == -2 && reply[1] == 0:
		return AcquireResult{}, fmt.Errorf("%w: semaphore %q has no size stored, and none was given", ErrInvalidSize, s.keys.Name)
	case len(reply) == 2 && reply[0] == -2:
		return AcquireResult{}, fmt.Errorf("%w: %d, semaphore %q has %d", ErrInvalidPermits, s.weight, s.keys.Name, reply[1])
	case len(reply) == 1 && reply[0] == -4:
		return AcquireResult{}, fmt.Errorf("%w: semaphore %q", ErrPermitsHeld, s.keys.Name)
	}
	res, err := parseAcquireReply(reply)
	if err != nil {
		return AcquireResult{}, fmt.Errorf("reentrant: acquire %s %q: %w", s.keys.Kind, s.keys.Name, err)
	}
	return res, nil
}

// Release leaves one count of owner's hold in the mode of ID
// hold (AcquireResult.HoldID), as Keys.Release does under a token:
// NotHeld, changing nothing, when owner does not hold so (a hold that
// ended, even if the owner holds again since); the release of the last count grants what fits of the
// queue before it returns. requestID must be unique per release: a
// repeated call with the same ID replays the first result.
func (s SharedMode) Release(ctx context.Context, rdb redis.Scripter, owner string, hold uint64, requestID string) (ReleaseResult, error) {
	k := s.keys
	n, err := sharedReleaseScript.Run(ctx, rdb, k.keys(k.HoldIDs, k.RequestKey(requestID)), owner, formatToken(hold),
		string(s.mode), k.size, k.lock.requestTTL.Milliseconds(), k.lock.publish).Int64()
	if err != nil {
		return ReleaseResult{}, fmt.Errorf("reentrant: release %s %q: %w", k.Kind, k.Name, err)
	}
	if n == -2 {
		k.handOn(ctx, rdb)
	}
	return parseReleaseReply(n), nil
}

// Leave takes waiter w out of the queue, where Acquire (or, with newOwner,
// AcquireNew) queued it for owner and lease; w at the queue's head, which
// the waiters behind it wait for, grants what then fits before it returns.
// If w was granted its hold meanwhile, it leaves that count of the hold,
// granting what that frees before it returns, and reports true. Repeating
// it is harmless.
func (s SharedMode) Leave(ctx context.Context, rdb redis.Scripter, w Waiter, owner string, lease time.Duration, newOwner bool) (bool, error) {
	ms, err := leaseMillis(lease)
	if err != nil {
		return false, err
	}
	k := s.keys
	record := w.sharedRecord(s.mode, s.weight, owner, ms, k.lock.aliveTTL.Milliseconds(), !newOwner)
	n, err := sharedLeaveScript.Run(ctx, rdb, k.keys(k.HoldIDs), owner, string(s.mode), w.ID, record, k.size,
		k.lock.publish).Int64()
	if err != nil {
		return false, fmt.Errorf("reentrant: leave %s %q: %w", k.Kind, k.Name, err)
	}
	if n == 2 || n == 3 {
		k.handOn(ctx, rdb)
	}
	return n == 1 || n == 2, nil
}

// Renew makes sure owner's hold in the mode of ID hold has at
// least lease left, when owner still holds it and its lease has not run
// out by the server clock (it never shortens a lease), and reports whether
// it did.
func (s SharedMode) Renew(ctx context.Context, rdb redis.Scripter, owner string, hold uint64, lease time.Duration) (bool, error) {
	return s.HoldRef(owner, hold).renew(ctx, rdb, lease)
}

// HoldRef names owner's hold in the mode of ID hold, for
// RenewAll, which renews it in the same script call as the other holds of
// its slot, plain locks' included. The HoldRef's Token is the hold ID.
func (s SharedMode) HoldRef(owner string, hold uint64) HoldRef {
	return HoldRef{Owner: owner, Token: hold, mode: &s}
}
