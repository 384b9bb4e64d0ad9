package rlock

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
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

// forceUnlockQuorum is ForceUnlock in quorum mode, in two rounds, each
// returning once a majority has answered: it reads the hold on every node,
// then deletes each hold it read by its ID (ForceReleaseWaking's hold). A
// node whose read answers late is forced too, where it names a hold the
// call read in time (quorum holds have one ID on every node); a later
// hold there has another. So a copy that runs after the call returned
// (held on the network, or resent) deletes nothing once another hold has
// replaced the one it names: with a plain force release, a copy that
// reached a node after a later hold was made on a bare majority there took
// that hold below a majority while its Context was live, and another owner
// took the lock (outside attack 10). The hold this client has of the lock,
// if any is among those deleted, is lost. Fewer than a majority answering
// a round is ErrNoQuorum, with the lock deleted where the second round's
// answers came.
func (c *Client) forceUnlockQuorum(ctx context.Context, name string) (int64, error) {
	r, err := c.quorum.lock(c, name)
	if err != nil {
		return 0, err
	}
	forceOn := func(ctx context.Context, i int, hold uint64) (uint64, error) {
		return r.nodes[i].keys.ForceReleaseWaking(ctx, r.nodes[i].rdb, hold, newRequestID())
	}
	answered := func(uint64) bool { return true }
	// holds, final and early are guarded by mu until final is set; holds
	// and early change no more after that.
	var mu sync.Mutex
	holds := map[int]uint64{}     // node → the ID of the hold it had, 0 where free
	final := false                // holds is complete: a late read is judged at once
	var early []nodeReply[uint64] // late reads that came before that
	forceLate := func(late nodeReply[uint64]) {
		if late.err == nil && late.val != 0 && slices.Contains(slices.Collect(maps.Values(holds)), late.val) {
			c.background.run(c.cfg.watchdogLease, func(ctx context.Context) { _, _ = forceOn(ctx, late.node, late.val) })
		}
	}
	reads, t, err := untilVerdict(ctx, r, func(ctx context.Context, i int) (uint64, error) {
		st, err := r.nodes[i].keys.Inspect(ctx, r.nodes[i].rdb)
		if err != nil || len(st.Holders) == 0 {
			return 0, err
		}
		return st.LastToken, nil
	}, answered, func(late nodeReply[uint64]) {
		mu.Lock()
		if !final {
			early = append(early, late)
			mu.Unlock()
			return
		}
		mu.Unlock()
		forceLate(late)
	})
	mu.Lock()
	for _, rep := range reads {
		if rep.err == nil {
			holds[rep.node] = rep.val
		}
	}
	final = true
	mu.Unlock()
	for _, late := range early {
		forceLate(late)
	}
	if err == nil {
		_, err = r.verdict(t)
	}
	if err != nil {
		return 0, err
	}
	replies, t, err := untilVerdict(ctx, r, func(ctx context.Context, i int) (uint64, error) {
		hold, ok := holds[i]
		switch {
		case !ok:
			return 0, errNotRead
		case hold == 0:
			return 0, nil
		}
		return forceOn(ctx, i, hold)
	}, answered, func(nodeReply[uint64]) {})
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

// errNotRead is a node whose hold a quorum ForceUnlock did not read in
// time: its second round sends that node nothing (its late read may).
var errNotRead = errors.New("its hold was not read by the time a majority's were")
