package reentrant

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// inspectScript runs lua/inspect.lua.
var inspectScript = plainScript("inspect.lua")

// State is a snapshot of a lock, as Inspect reads it.
type State struct {
	// Holders maps owner ID to hold count; empty when the lock is free.
	Holders map[string]int64
	// TTL is the remaining lease; negative when the lock is free.
	TTL time.Duration
	// LastToken is the last fencing token handed out for this lock; 0 once
	// the counter has expired (see the package doc's Footprint).
	LastToken uint64
}

// Inspect reads the lock's holders, their counts, its TTL and its last token.
func (k Keys) Inspect(ctx context.Context, rdb redis.Scripter) (State, error) {
	reply, err := inspectScript.Run(ctx, rdb, []string{k.Hash, k.Fence}).Slice()
	if err != nil {
		return State{}, fmt.Errorf("reentrant: inspect %q: %w", k.Name, err)
	}
	return parseState(reply)
}

// parseState reads inspect.lua's reply.
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
