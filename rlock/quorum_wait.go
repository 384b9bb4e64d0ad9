package rlock

import (
	"context"
	"time"

	"github.com/batonlock/baton/reentrant"
)

// subscribe makes the call a waiter on every node: subscribed on each
// node's grant line, where any release or grant on that node that
// concerns it wakes it (see anyWake). Unless always is set, it does so
// only where every node's line is subscribed for good (no round trip),
// and returns nil otherwise. A node whose line is not up is waited for
// up to its read timeout, and only while fewer than a majority are
// subscribed: the call then waits without it, and looks there without
// queueing.
func (r *quorumLock) subscribe(ctx context.Context, _ *Client, always bool) (*subscribed, error) {
	ready := make([]bool, len(r.nodes))
	for i, n := range r.q.nodes {
		ready[i] = n.grants.ready()
		if !always && !ready[i] {
			return nil, nil
		}
	}
	replies, err := fanOut(ctx, r.c, r.c.cfg.watchdogLease, r.all(),
		func(ctx context.Context, i int) (*subscribed, error) {
			n := r.q.nodes[i]
			ctx, cancel := context.WithTimeout(ctx, max(readTimeout(n.rdb), time.Second))
			defer cancel()
			return subscribeForGrants(ctx, n, r.nodes[i], true)
		},
		func(got []nodeReply[*subscribed]) bool { return subscribedAll(got, ready, r.q.majority) },
		func(late nodeReply[*subscribed]) { late.val.close() })
	subs := make([]*subscribed, len(r.nodes))
	for _, rep := range replies {
		subs[rep.node] = rep.val
	}
	if err != nil {
		for _, s := range subs {
			s.close()
		}
		return nil, err
	}
	var wake anyWake
	r.mu.Lock()
	for i, s := range subs {
		if s != nil {
			r.waiters[i] = s.w
			wake = append(wake, s.sub)
		}
	}
	r.mu.Unlock()
	if len(wake) == 0 {
		return nil, r.q.unreachable(r.name(), nil)
	}
	return &subscribed{w: reentrant.Waiter{ID: randomHex(8)}, sub: wake, look: true}, nil
}

// subscribedAll says whether a quorum waiter's subscriptions got are
// enough: every node whose line is up has answered, and, unless every
// node has, a majority is subscribed.
func subscribedAll(got []nodeReply[*subscribed], ready []bool, majority int) bool {
	answered := make([]bool, len(ready))
	ok := 0
	for _, r := range got {
		answered[r.node] = true
		if r.err == nil {
			ok++
		}
	}
	for i, up := range ready {
		if up && !answered[i] {
			return false
		}
	}
	return ok >= majority
}
