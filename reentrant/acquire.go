package reentrant

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// acquireScript runs lua/acquire.lua, and lua/acquire_queue.lua when the
// lock is held or queued for (see freePathScript).
var acquireScript = freePathScript([]string{"master.lua", "token.lua", "take.lua", "acquire.lua"}, "acquire_queue.lua")

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
	// Reported (when Acquired) says the hold was there before the call and
	// the call changed nothing, its lease included: a replay, a waiter
	// finding the grant it was handed, or a hold of an owner made for one
	// call found by another of its acquires.
	Reported bool
	// Claimed (with Reported) says the call is a waiter's look that found
	// the grant its waiter was handed, and claimed it: the hold is this
	// look's, not one an earlier look of the call took (a plain lock's
	// acquire only).
	Claimed bool
	// hold is a shared resource's hold ID (see HoldID); 0 for a
	// plain lock.
	hold uint64
	// Draining (when not Acquired) says the lock is free, but its queue
	// still starts with entries that no longer listen, more than this
	// call's runs could drop (a bounded number, so that a call's time is
	// bounded). Nothing was taken, since live waiters may be behind them;
	// a waiter is queued. HolderTTL is zero: call again at once.
	Draining bool
	// ownerGranted (when not Acquired) says the call found the lock free
	// and granted its queue's head, a waiter of the call's own given
	// owner: the call, queued behind that hold, must be repeated at once,
	// and the repeat re-enters it (see untilDrained).
	ownerGranted bool
}

// HoldID is the ID of the owner's hold (when Acquired), which a release,
// a renewal or a re-entry names it by: unique per hold, kept on re-entry.
// For a plain lock it is the token. A shared resource's hold has an
// ID of its own (see the package doc's Shared resources), since a
// read's token, the last write's, is shared by every read since.
func (r AcquireResult) HoldID() uint64 { return holdID(r.hold, r.Token) }

// holdID is a hold's ID: hold, a shared resource's, else the token.
func holdID(hold, token uint64) uint64 {
	if hold != 0 {
		return hold
	}
	return token
}

// Acquire takes the lock for owner, or re-enters it when owner already holds
// it. With a non-zero token it only re-enters the hold of that token, and
// reports HoldGone when that hold no longer exists. requestID must be unique
// per logical attempt: a repeated call with the same ID replays the first
// result while the owner still holds the lock. The lease is applied rounded
// up to whole milliseconds, and re-entry never shortens the lease.
//
// With a Waiter, a call that finds the lock held joins its queue (once,
// however often it is repeated), and a free lock with a queue goes to the
// queue's head, which may be this waiter. Repeating the call is how a
// waiter checks whether it was granted the lock: it then reports the hold
// without counting it again. No call, with a Waiter or without, takes a
// free lock past a queue: it takes it only when the queue is empty or
// holds only entries that no longer listen, which it drops.
func (k Keys) Acquire(ctx context.Context, rdb redis.Scripter, owner, requestID string, lease time.Duration, token uint64, w Waiter) (AcquireResult, error) {
	return k.acquire(ctx, rdb, owner, requestID, lease, false, token, w)
}

// AcquireNew takes the lock for an owner ID made for this one call, which
// nothing else can hold: if owner already holds the lock, that hold can only
// come from an earlier run of this call (a resent command, or a retry after
// a lost reply), and it is reported as it is instead of counted again. So
// the common path needs no request key.
func (k Keys) AcquireNew(ctx context.Context, rdb redis.Scripter, owner string, lease time.Duration, w Waiter) (AcquireResult, error) {
	return k.acquire(ctx, rdb, owner, "", lease, true, 0, w)
}

// acquire runs acquire.lua for Acquire and AcquireNew, until drained
// (untilDrained).
func (k Keys) acquire(ctx context.Context, rdb redis.Scripter, owner, requestID string, lease time.Duration, newOwner bool, token uint64, w Waiter) (AcquireResult, error) {
	ms, err := leaseMillis(lease)
	if err != nil {
		return AcquireResult{}, err
	}
	keys := []string{k.Hash, k.Fence, k.Queue, k.Granted}
	if !newOwner {
		keys = append(keys, k.RequestKey(requestID))
	}
	a := acquireArgs{owner: owner, token: token, leaseMs: ms, newOwner: newOwner,
		requestMs: k.requestTTL.Milliseconds(), publish: k.publish}
	if w.ID != "" {
		a.waiter, a.aliveKey, a.aliveMs = w.ID, w.Alive, k.aliveTTL.Milliseconds()
		a.record = w.record(owner, ms, a.aliveMs, !newOwner)
		if w.Wakes || w.Unqueued {
			keys = append(keys, k.Wake)
			a.unqueued = wireFlag(w.Unqueued)
		}
	}
	args := a.argv()
	return untilDrained(func() (AcquireResult, error) { return k.acquireOnce(ctx, rdb, keys, args) })
}

// untilDrained runs an acquire script (once) again while it reports
// Draining, or ownerGranted, up to drainPasses runs. A run that finds the
// resource free behind more dead entries than it may drop takes nothing,
// and the next run goes on where it stopped; one that granted a waiter of
// the caller's own owner is re-entered by the next. Each run is the same
// call, a look for a waiter: repeating it is safe.
func untilDrained(once func() (AcquireResult, error)) (AcquireResult, error) {
	for run := 1; ; run++ {
		res, err := once()
		if err != nil || !(res.Draining || res.ownerGranted) || run == drainPasses {
			return res, err
		}
	}
}

// acquireArgs are acquire.lua's arguments, by the names its header gives
// them: the hold asked for, the waiter (zero when the call does not queue)
// and the namespace's publish command.
type acquireArgs struct {
	owner     string
	token     uint64 // 0: take or re-enter any hold
	leaseMs   int64
	newOwner  bool
	requestMs int64

	waiter   string
	record   string
	aliveKey string
	aliveMs  int64
	unqueued string // with the wake key only: wireFlag(Waiter.Unqueued)

	publish string
}

// argv is a in acquire.lua's ARGV order; the waiter's only when the call
// queues.
func (a acquireArgs) argv() []any {
	args := []any{a.owner, formatToken(a.token), a.leaseMs, wireFlag(a.newOwner), a.requestMs}
	if a.waiter != "" {
		args = append(args, a.waiter, a.record, a.aliveKey, a.aliveMs)
	}
	if a.unqueued != "" {
		args = append(args, a.unqueued)
	}
	return append(args, a.publish)
}

// acquireOnce runs the acquire script once and reads its reply.
func (k Keys) acquireOnce(ctx context.Context, rdb redis.Scripter, keys []string, args []any) (AcquireResult, error) {
	reply, err := acquireScript.Run(ctx, rdb, keys, args...).Int64Slice()
	if err == nil {
		var res AcquireResult
		if res, err = parseAcquireReply(reply); err == nil {
			return res, nil
		}
	}
	return AcquireResult{}, fmt.Errorf("reentrant: acquire %q: %w", k.Name, err)
}

// parseAcquireReply reads the reply of an acquire script (acquire.lua,
// shared_acquire.lua): its headers give the replies.
func parseAcquireReply(reply []int64) (AcquireResult, error) {
	switch {
	case len(reply) == 5 && reply[0] == 1 && reply[4] > 0:
		return AcquireResult{Acquired: true, HoldCount: reply[1], Token: uint64(reply[2]), Reported: reply[3] == 1,
			hold: uint64(reply[4])}, nil
	case (len(reply) == 3 || len(reply) == 4) && reply[0] == 1:
		return AcquireResult{Acquired: true, HoldCount: reply[1], Token: uint64(reply[2]), Reported: len(reply) == 4,
			Claimed: len(reply) == 4 && reply[3] == 2}, nil
	case len(reply) == 2 && reply[0] == 0:
		return AcquireResult{HolderTTL: time.Duration(reply[1]) * time.Millisecond}, nil
	case len(reply) == 1 && reply[0] == -1:
		return AcquireResult{HoldGone: true}, nil
	case len(reply) == 1 && reply[0] == 2:
		return AcquireResult{Draining: true}, nil
	case len(reply) == 1 && reply[0] == 3:
		return AcquireResult{ownerGranted: true}, nil
	}
	return AcquireResult{}, fmt.Errorf("unexpected reply %v", reply)
}
