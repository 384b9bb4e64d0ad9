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
	acquireSetScript = newScript(luaFiles("master.lua", "token.lua", "take.lua", "replay.lua", "acquire_set.lua")...)
	// releaseSetScript runs lua/release_set.lua, which hands each member
	// on to its own waiter.
	releaseSetScript = grantingScript("replay.lua", "release_set.lua")
)

// ErrEmptySet reports a set call given no members.
var ErrEmptySet = errors.New("reentrant: empty lock set")

// AcquireSet takes, for owner, the free members of a lock set, in the
// order given, as far as it can: each lock nobody holds and nobody waits
// for is taken as Acquire takes it, and the call stops at the first other
// member, taking nothing past it. It returns the tokens of the members
// taken, from the first on: fewer than members when it stopped. On a
// cluster every member must be in one slot (the caller groups them).
//
// requestID must be unique per call unless newOwner: a repeated call with
// the same ID replays the first result. With newOwner (an owner made for
// this call) it needs none: a member the owner holds can only be this
// call's, and a repeated call counts it as taken, with its token.
func AcquireSet(ctx context.Context, rdb redis.Scripter, members []Keys, owner, requestID string, lease time.Duration, newOwner bool) ([]uint64, error) {
	if len(members) == 0 {
		return nil, ErrEmptySet
	}
	ms, err := leaseMillis(lease)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, 3*len(members)+1)
	for _, k := range members {
		keys = append(keys, k.Hash, k.Fence, k.Queue)
	}
	if !newOwner {
		keys = append(keys, members[0].RequestKey(requestID))
	}
	args := []any{owner, ms, wireFlag(newOwner), members[0].requestTTL.Milliseconds()}
	reply, err := acquireSetScript.Run(ctx, rdb, keys, args...).Int64Slice()
	if err == nil && len(reply) > len(members) {
		err = fmt.Errorf("unexpected reply %v", reply)
	}
	if err != nil {
		return nil, fmt.Errorf("reentrant: acquire set from %q: %w", members[0].Name, err)
	}
	tokens := make([]uint64, len(reply))
	for i, t := range reply {
		tokens[i] = uint64(t)
	}
	return tokens, nil
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
