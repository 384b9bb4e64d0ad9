package rlock

import (
	"context"
	"slices"
	"time"

	"github.com/batonlock/baton/reentrant"
)

// inspectQuorum is Inspect in quorum mode: the nodes' states, read at
// once (a paused node delays it up to its read timeout), as the quorum
// sees them. A holder is an owner a majority of nodes
// has; TTL is how long a majority still keeps its hold (the majority-th
// longest of the nodes' TTLs); LastToken is the highest of the nodes'.
// Fewer than a majority answering is ErrNoQuorum.
func (c *Client) inspectQuorum(ctx context.Context, name string) (State, error) {
	r, err := c.quorum.lock(c, name)
	if err != nil {
		return State{}, err
	}
	replies, err := everyNode(ctx, r, func(ctx context.Context, i int) (reentrant.State, error) {
		return r.nodes[i].keys.Inspect(ctx, r.nodes[i].rdb)
	})
	if err != nil {
		return State{}, err
	}
	var t tally
	var ttls []time.Duration
	seen := map[string][]int64{} // owner → its count on each node that has it
	st := State{Holders: map[string]int64{}}
	for _, rep := range replies {
		if t.count(rep.node, true, rep.err); rep.err != nil {
			continue
		}
		ttls = append(ttls, rep.val.TTL)
		st.LastToken = max(st.LastToken, rep.val.LastToken)
		for owner, n := range rep.val.Holders {
			seen[owner] = append(seen[owner], n)
		}
	}
	if _, err := r.verdict(t); err != nil {
		return State{}, err
	}
	for owner, counts := range seen {
		if len(counts) >= c.quorum.majority {
			st.Holders[owner] = slices.Max(counts)
		}
	}
	slices.Sort(ttls)
	st.TTL = ttls[len(ttls)-c.quorum.majority]
	return st, nil
}

// forceUnlockQuorum is ForceUnlock in quorum mode: the lock is deleted on
// every node (it returns once a majority has answered), and the hold this client has of it, if any is
// among those deleted, is lost. Fewer than a majority answering is
// ErrNoQuorum, with the lock deleted where they did.
func (c *Client) forceUnlockQuorum(ctx context.Context, name string) (int64, error) {
	r, err := c.quorum.lock(c, name)
	if err != nil {
		return 0, err
	}
	replies, t, err := untilVerdict(ctx, r, func(ctx context.Context, i int) (uint64, error) {
		return r.nodes[i].keys.ForceReleaseWaking(ctx, r.nodes[i].rdb, newRequestID())
	}, func(uint64) bool { return true }, func(nodeReply[uint64]) {})
	if err != nil {
		return 0, err
	}
	var deleted uint64
	for _, rep := range replies {
		deleted = max(deleted, rep.val)
	}
	_, verr := r.verdict(t)
	if deleted == 0 {
		return 0, verr
	}
	c.forceReleased(r.id(), deleted)
	return 1, verr
}
