package reentrant

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// The scripts of a shared resource as a whole: lua/shared_*.lua.
var (
	sharedPassScript         = sharedScript("shared_pass.lua")
	sharedSetSizeScript      = sharedScript("shared_set_size.lua")
	sharedForceReleaseScript = sharedScript("replay.lua", "shared_force_release.lua")
	sharedInspectScript      = newScript(luaFiles("token.lua", "shared.lua", "shared_inspect.lua")...)
)

// handOn goes on with a grant that stopped at its bound (see planGrants in
// lua/shared_grant.lua), as Keys.handOn does for a lock: it runs
// shared_pass.lua until a run grants all it may, or drainPasses runs are
// done. It reports nothing; what it leaves, the waiters' looks go on with.
func (k SharedKeys) handOn(ctx context.Context, rdb redis.Scripter) {
	for range drainPasses {
		left, err := sharedPassScript.Run(ctx, rdb, k.keys(k.HoldIDs), k.size, k.lock.publish).Int64()
		if err != nil || left == 0 {
			return
		}
	}
}

// SetSize sets a semaphore's size in Redis, and grants what fits of its
// queue under it before it returns: a larger size admits waiters at once;
// a smaller one ends no hold, and admits nobody until the holds take less
// than it. Repeating it is harmless.
//
// The size is kept for two of lease from now, and then for as long as
// anything depends on it: each hold and waiter keeps it for two of its own
// lease past its acquire, grant, renewal or look (see the package doc's
// Shared resources). A semaphore idle past that has no size, and
// the next call stores its handle's (WithSize).
func (k SharedKeys) SetSize(ctx context.Context, rdb redis.Scripter, size int64, lease time.Duration) error {
	if k.Kind != KindSemaphore {
		return fmt.Errorf("%w: a %s has no size to set", ErrInvalidKind, k.Kind)
	}
	if size < 1 || size > MaxSize {
		return fmt.Errorf("%w: %d, the range is 1 to %d", ErrInvalidSize, size, MaxSize)
	}
	ms, err := leaseMillis(lease)
	if err != nil {
		return err
	}
	keys := k.keys(k.HoldIDs)
	left, err := sharedSetSizeScript.Run(ctx, rdb, keys, size, ms, k.lock.publish).Int64()
	if err != nil {
		return fmt.Errorf("reentrant: set size %s %q: %w", k.Kind, k.Name, err)
	}
	if left == 1 {
		k.handOn(ctx, rdb)
	}
	return nil
}

// ForceRelease ends every hold of the resource, whoever holds it, and
// grants what fits of its queue before it returns. It returns how many
// holds it ended, and the hold ID (AcquireResult.HoldID) of each, so that
// a client ends exactly those: a hold its owner took again while the reply
// was on its way has an ID of its own. Like Keys.ForceRelease, a repeated
// call with the same requestID replays the first result rather than
// ending the holds its first run granted.
func (k SharedKeys) ForceRelease(ctx context.Context, rdb redis.Scripter, requestID string) (int64, []uint64, error) {
	reply, err := sharedForceReleaseScript.Run(ctx, rdb, k.keys(k.HoldIDs, k.RequestKey(requestID)), k.size,
		k.lock.publish, k.lock.requestTTL.Milliseconds()).Int64Slice()
	if err != nil {
		return 0, nil, fmt.Errorf("reentrant: force-release %s %q: %w", k.Kind, k.Name, err)
	}
	if len(reply) < 2 {
		return 0, nil, fmt.Errorf("reentrant: force-release %s %q: unexpected reply %v", k.Kind, k.Name, reply)
	}
	if reply[1] == 1 {
		k.handOn(ctx, rdb)
	}
	ended := make([]uint64, len(reply)-2)
	for i, id := range reply[2:] {
		ended[i] = uint64(id)
	}
	return reply[0], ended, nil
}

// SharedState is a snapshot of a shared resource, as Inspect reads it.
type SharedState struct {
	// Holds are the holds whose lease has not run out, in the order of
	// their lease deadlines.
	Holds []SharedHold
	// Used is the sum of the holds' weights.
	Used int64
	// Size is the semaphore's size stored in Redis, 0 for none (always,
	// for a read-write lock, whose size is WriteWeight).
	Size int64
	// LastToken is the fencing-token counter: the last write or permits
	// grant's token, or a read's that found none; 0 once it has expired
	// (see the package doc's Footprint).
	LastToken uint64
	// Queued is the length of the queue, dead entries included.
	Queued int64
}

// SharedHold is one hold, as Inspect reads it.
type SharedHold struct {
	Mode   Mode
	Owner  string
	Count  int64         // its hold count
	Weight int64         // how much of the size it takes
	Token  uint64        // its fencing token
	TTL    time.Duration // how long its lease has left, by the server clock
}

// Inspect reads the resource's holds, its size, its last token and its
// queue's length, as the server clock has them now.
func (k SharedKeys) Inspect(ctx context.Context, rdb redis.Scripter) (SharedState, error) {
	reply, err := sharedInspectScript.Run(ctx, rdb, k.keys()).Slice()
	if err != nil {
		return SharedState{}, fmt.Errorf("reentrant: inspect %s %q: %w", k.Kind, k.Name, err)
	}
	st, err := parseSharedState(reply)
	if err != nil {
		return SharedState{}, fmt.Errorf("reentrant: inspect %s %q: %w", k.Kind, k.Name, err)
	}
	return st, nil
}

// parseSharedState reads shared_inspect.lua's reply.
func parseSharedState(reply []any) (SharedState, error) {
	ints := func(vs ...any) ([]int64, bool) {
		out := make([]int64, len(vs))
		for i, v := range vs {
			n, ok := v.(int64)
			if !ok {
				return nil, false
			}
			out[i] = n
		}
		return out, true
	}
	head, ok := ints(reply[:min(4, len(reply))]...)
	if !ok || len(head) != 4 || (len(reply)-4)%6 != 0 {
		return SharedState{}, fmt.Errorf("unexpected reply %v", reply)
	}
	st := SharedState{Used: head[0], Size: max(head[1], 0), LastToken: uint64(head[2]), Queued: head[3]}
	for i := 4; i < len(reply); i += 6 {
		mode, ok1 := reply[i].(string)
		owner, ok2 := reply[i+1].(string)
		n, ok3 := ints(reply[i+2 : i+6]...)
		if !ok1 || !ok2 || !ok3 {
			return SharedState{}, fmt.Errorf("unexpected reply %v", reply)
		}
		st.Holds = append(st.Holds, SharedHold{Mode: Mode(mode), Owner: owner, Count: n[0], Weight: n[1],
			Token: uint64(n[2]), TTL: time.Duration(n[3]) * time.Millisecond})
	}
	return st, nil
}
