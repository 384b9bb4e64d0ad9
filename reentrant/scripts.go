package reentrant

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/acquire.lua
	acquireLua string
	//go:embed lua/release.lua
	releaseLua string
	//go:embed lua/renew.lua
	renewLua string
	//go:embed lua/force_release.lua
	forceReleaseLua string
	//go:embed lua/inspect.lua
	inspectLua string

	// Scripts run by EVALSHA; redis.Script falls back to EVAL on NOSCRIPT.
	acquireScript      = redis.NewScript(acquireLua)
	releaseScript      = redis.NewScript(releaseLua)
	renewScript        = redis.NewScript(renewLua)
	forceReleaseScript = redis.NewScript(forceReleaseLua)
	inspectScript      = redis.NewScript(inspectLua)
)

// releaseMessage is the payload published when a lock is freed. Waiters only
// need the wake-up; the payload carries nothing.
const releaseMessage = "0"

// ErrInvalidLease reports a lease that is not positive.
var ErrInvalidLease = errors.New("reentrant: lease must be positive")

// ErrNotHeld is what RenewAll reports for a hold whose owner no longer holds
// the lock.
var ErrNotHeld = errors.New("reentrant: lock not held by this owner")

// AcquireResult is the outcome of one acquire attempt.
type AcquireResult struct {
	// Acquired reports that the owner holds the lock after the call.
	Acquired bool
	// HoldCount is the owner's hold count after the call (when Acquired).
	HoldCount int64
	// Token is the fencing token of the owner's hold (when Acquired).
	Token uint64
	// HolderTTL is the remaining lease of the current holder when not
	// Acquired, as PTTL reads it: zero in the lease's last millisecond,
	// negative when Redis reported no expiry.
	HolderTTL time.Duration
	// HoldGone reports that the hold a re-entry named by token no longer
	// exists: nothing changed.
	HoldGone bool
}

// ReleaseStatus says what a release did.
type ReleaseStatus int

const (
	// NotHeld: the owner did not hold the lock; nothing changed.
	NotHeld ReleaseStatus = iota
	// StillHeld: one hold was left; the owner still holds the lock.
	StillHeld
	// Released: the last hold was left; the lock was deleted and published.
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
	Status ReleaseStatus
	// Remaining is the owner's hold count after the call.
	Remaining int64
}

// State is a snapshot of a lock, as Inspect reads it.
type State struct {
	// Holders maps owner ID to hold count; empty when the lock is free.
	Holders map[string]int64
	// TTL is the remaining lease; negative when the lock is free.
	TTL time.Duration
	// LastToken is the last fencing token handed out for this lock.
	LastToken uint64
}

// leaseMillis is lease in whole milliseconds, the resolution of PEXPIRE,
// rounded up: Redis must never expire a lock before the caller's lease ends.
func leaseMillis(lease time.Duration) (int64, error) {
	if lease <= 0 {
		return 0, fmt.Errorf("%w: got %v", ErrInvalidLease, lease)
	}
	return int64((lease + time.Millisecond - 1) / time.Millisecond), nil
}

// Acquire takes the lock for owner, or re-enters it when owner already holds
// it. With a non-zero token it only re-enters the hold of that token, and
// reports HoldGone when that hold no longer exists. requestID must be unique
// per logical attempt: a repeated call with the same ID replays the first
// result while the owner still holds the lock. The lease is applied rounded
// up to whole milliseconds, and re-entry never shortens the lease.
func (k Keys) Acquire(ctx context.Context, rdb redis.Scripter, owner, requestID string, lease time.Duration, token uint64) (AcquireResult, error) {
	return k.acquire(ctx, rdb, owner, requestID, lease, false, token)
}

// AcquireNew takes the lock for an owner ID made for this one call, which
// nothing else can hold: if owner already holds the lock, that hold can only
// come from an earlier run of this call (a resent command, or a retry after
// a lost reply), and it is reported as it is instead of counted again. So
// the common path needs no request key.
func (k Keys) AcquireNew(ctx context.Context, rdb redis.Scripter, owner string, lease time.Duration) (AcquireResult, error) {
	return k.acquire(ctx, rdb, owner, "", lease, true, 0)
}

func (k Keys) acquire(ctx context.Context, rdb redis.Scripter, owner, requestID string, lease time.Duration, newOwner bool, token uint64) (AcquireResult, error) {
	ms, err := leaseMillis(lease)
	if err != nil {
		return AcquireResult{}, err
	}
	keys := []string{k.Hash, k.Fence, k.RequestKey(requestID)}
	isNew := "0"
	if newOwner {
		isNew = "1"
	}
	reply, err := acquireScript.Run(ctx, rdb, keys, owner, ms, k.requestTTL.Milliseconds(), isNew, formatToken(token)).Int64Slice()
	if err != nil {
		return AcquireResult{}, fmt.Errorf("reentrant: acquire %q: %w", k.Name, err)
	}
	switch {
	case len(reply) == 3 && reply[0] == 1:
		return AcquireResult{Acquired: true, HoldCount: reply[1], Token: uint64(reply[2])}, nil
	case len(reply) == 2 && reply[0] == 0:
		return AcquireResult{HolderTTL: time.Duration(reply[1]) * time.Millisecond}, nil
	case len(reply) == 1 && reply[0] == -1:
		return AcquireResult{HoldGone: true}, nil
	}
	return AcquireResult{}, fmt.Errorf("reentrant: acquire %q: unexpected reply %v", k.Name, reply)
}

// Release leaves one of owner's holds on the hold of token; it reports
// NotHeld, changing nothing, when owner does not hold the lock under that
// token. The lease is left as it is. requestID makes a retried call replay
// the first result.
func (k Keys) Release(ctx context.Context, rdb redis.Scripter, owner string, token uint64, requestID string) (ReleaseResult, error) {
	keys := []string{k.Hash, k.Channel, k.RequestKey(requestID), k.Fence}
	n, err := releaseScript.Run(ctx, rdb, keys, owner, formatToken(token), k.requestTTL.Milliseconds(), k.publish, releaseMessage).Int64()
	if err != nil {
		return ReleaseResult{}, fmt.Errorf("reentrant: release %q: %w", k.Name, err)
	}
	switch {
	case n < 0:
		return ReleaseResult{Status: NotHeld}, nil
	case n == 0:
		return ReleaseResult{Status: Released}, nil
	}
	return ReleaseResult{Status: StillHeld, Remaining: n}, nil
}

// Renew makes sure the lock has at least lease left when owner still holds
// it under token (it never shortens a lease), and reports whether owner did.
func (k Keys) Renew(ctx context.Context, rdb redis.Scripter, owner string, token uint64, lease time.Duration) (bool, error) {
	ms, err := leaseMillis(lease)
	if err != nil {
		return false, err
	}
	n, err := renewScript.Run(ctx, rdb, []string{k.Hash, k.Fence}, owner, formatToken(token), ms).Int64()
	if err != nil {
		return false, fmt.Errorf("reentrant: renew %q: %w", k.Name, err)
	}
	return n == 1, nil
}

// ForceRelease deletes the lock whoever holds it and wakes its waiters. It
// returns the token of the hold it deleted, or 0 when the lock was free.
func (k Keys) ForceRelease(ctx context.Context, rdb redis.Scripter) (uint64, error) {
	n, err := forceReleaseScript.Run(ctx, rdb, []string{k.Hash, k.Channel, k.Fence}, k.publish, releaseMessage).Int64()
	if err != nil {
		return 0, fmt.Errorf("reentrant: force-release %q: %w", k.Name, err)
	}
	return uint64(n), nil
}

// formatToken writes a token as the scripts compare it with the counter.
func formatToken(token uint64) string { return strconv.FormatUint(token, 10) }

// Inspect reads the lock's holders, their counts, its TTL and its last token.
func (k Keys) Inspect(ctx context.Context, rdb redis.Scripter) (State, error) {
	reply, err := inspectScript.Run(ctx, rdb, []string{k.Hash, k.Fence}).Slice()
	if err != nil {
		return State{}, fmt.Errorf("reentrant: inspect %q: %w", k.Name, err)
	}
	return parseState(reply)
}

func parseState(reply []any) (State, error) {
	if len(reply) < 2 || len(reply)%2 != 0 {
		return State{}, fmt.Errorf("reentrant: inspect: unexpected reply %v", reply)
	}
	ttl, ok1 := reply[0].(int64)
	last, ok2 := reply[1].(int64)
	if !ok1 || !ok2 {
		return State{}, fmt.Errorf("reentrant: inspect: unexpected reply %v", reply)
	}
	st := State{Holders: map[string]int64{}, TTL: time.Duration(ttl) * time.Millisecond, LastToken: uint64(last)}
	for i := 2; i < len(reply); i += 2 {
		owner, _ := reply[i].(string)
		count, err := strconv.ParseInt(fmt.Sprint(reply[i+1]), 10, 64)
		if err != nil {
			return State{}, fmt.Errorf("reentrant: inspect: count of %q: %w", owner, err)
		}
		st.Holders[owner] = count
	}
	return st, nil
}
