package reentrant

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	// acquireSetScript runs lua/acquire_set.lua: it takes free locks only,
	// so it needs no grant library.
	acquireSetScript = newScript(luaFiles("master.lua", "token.lua", "take.lua", "record.lua", "replay.lua", "acquire_set.lua")...)
	// releaseSetScript runs lua/release_set.lua, which hands each member
	// on to its own waiter.
	releaseSetScript = grantingScript("replay.lua", "release_hold.lua", "release_set.lua")
)

var (
	// ErrEmptySet reports a set call given no members.
	ErrEmptySet = errors.New("reentrant: empty lock set")
	// ErrSetWaiter reports a set's acquire given a waiter in a namespace
	// whose waiters are each one lock's (see SharesWaiters).
	ErrSetWaiter = errors.New("reentrant: a lock set's waiter needs a namespace whose waiters serve every lock")
)

// SharesWaiters reports whether a waiter of this lock is a waiter of every
// lock of its namespace, with one queue record for all: grants go on the
// client's one channel (PUBLISH) and their receiver count judges liveness,
// so no channel or liveness key names the lock. A lock set's acquire may
// then queue its waiter at whichever member it stops at (AcquireSet).
func (k Keys) SharesWaiters() bool { return k.publish == "publish" }

// SetResult is the outcome of one AcquireSet.
type SetResult struct {
	// Tokens are the tokens of the members taken, from the first on:
	// fewer than the members when the call stopped.
	Tokens []uint64
	// Queued says the call's waiter was queued at the member it stopped
	// at, members[len(Tokens)].
	Queued bool
	// HolderTTL (when Queued) is that member's holder's remaining lease,
	// as PTTL reads it; zero when the waiter should look at once (the
	// member is free behind its queue, or held with no expiry).
	HolderTTL time.Duration
}

// AcquireSet takes, for owner, the free members of a lock set, in the
// order given, as far as it can: each lock nobody holds and nobody waits
// for is taken as Acquire takes it, and the call stops at the first other
// member, taking nothing past it. With a Waiter (one with an ID), it
// queues the waiter there, as Acquire does, unless owner holds that member
// (a re-entry does not queue): only where members[0].SharesWaiters, or it
// fails with ErrSetWaiter. On a cluster every member must be in one slot
// (the caller groups them).
//
// requestID must be unique per call unless newOwner: a repeated call with
// the same ID replays the first result. With newOwner (an owner made for
// this call) it needs none: a member the owner holds can only be this
// call's, and a repeated call counts it as taken, with its token. A waiter
// is queued once however often the call is repeated.
func AcquireSet(ctx context.Context, rdb redis.Scripter, members []Keys, owner, requestID string, lease time.Duration, newOwner bool, w Waiter) (SetResult, error) {
	if len(members) == 0 {
		return SetResult{}, ErrEmptySet
	}
	if w.ID != "" && !members[0].SharesWaiters() {
		return SetResult{}, ErrSetWaiter
	}
	ms, err := leaseMillis(lease)
	if err != nil {
		return SetResult{}, err
	}
	keys := make([]string, 0, 3*len(members)+1)
	for _, k := range members {
		keys = append(keys, k.Hash, k.Fence, k.Queue)
	}
	if !newOwner {
		keys = append(keys, members[0].RequestKey(requestID))
	}
	args := []any{owner, ms, wireFlag(newOwner), members[0].requestTTL.Milliseconds()}
	if w.ID != "" {
		args = append(args, w.ID, w.record(owner, ms, 0, !newOwner))
	}
	reply, err := acquireSetScript.Run(ctx, rdb, keys, args...).Int64Slice()
	if err == nil && (len(reply) == 0 || len(reply) > len(members)+1) {
		err = fmt.Errorf("unexpected reply %v", reply)
	}
	if err != nil {
		return SetResult{}, fmt.Errorf("reentrant: acquire set from %q: %w", members[0].Name, err)
	}
	res := SetResult{Tokens: make([]uint64, len(reply)-1), Queued: reply[0] >= 0}
	if res.Queued {
		res.HolderTTL = time.Duration(reply[0]) * time.Millisecond
	}
	for i, t := range reply[1:] {
		res.Tokens[i] = uint64(t)
	}
	return res, nil
}

// SetHold names one hold of a lock set's member: its lock, its owner and
// the token it is held under.
type SetHold struct {
	Keys  Keys
	Owner string
	Token uint64
}

// ReleaseSet leaves one hold of each of holds, each as Release leaves it,
// in one script call: the release of a member's last hold grants that
// member to its own oldest live waiter, if any, before it returns. On a
// cluster every hold must be in one slot (the caller groups them).
// requestID must be unique per call: a repeated call with the same ID
// replays the first result. The results are in the order of holds.
func ReleaseSet(ctx context.Context, rdb redis.Scripter, holds []SetHold, requestID string) ([]ReleaseResult, error) {
	if len(holds) == 0 {
		return nil, ErrEmptySet
	}
	first := holds[0].Keys
	keys := make([]string, 0, 4*len(holds)+1)
	args := make([]any, 0, 2*len(holds)+2)
	for _, h := range holds {
		keys = append(keys, h.Keys.Hash, h.Keys.Fence, h.Keys.Queue, h.Keys.Granted)
		args = append(args, h.Owner, formatToken(h.Token))
	}
	keys = append(keys, first.RequestKey(requestID))
	args = append(args, first.requestTTL.Milliseconds(), first.publish)
	reply, err := releaseSetScript.Run(ctx, rdb, keys, args...).Int64Slice()
	if err == nil && len(reply) != len(holds) {
		err = fmt.Errorf("unexpected reply %v", reply)
	}
	if err != nil {
		return nil, fmt.Errorf("reentrant: release set from %q: %w", first.Name, err)
	}
	results := make([]ReleaseResult, len(reply))
	for i, n := range reply {
		if n == -2 {
			holds[i].Keys.handOn(ctx, rdb)
		}
		results[i] = parseReleaseReply(n)
	}
	return results, nil
}
