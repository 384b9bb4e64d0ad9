package rlock

import (
	"context"

	"github.com/batonlock/baton/reentrant"
)

// subscribe makes the call a waiter on every node: subscribed on each
// node's grant line, where any release or grant on that node that
// concerns it wakes it (see anyWake). Unless always is set, it does so
// only where every node's line is subscribed for good (no round trip),
// and returns nil otherwise. A node whose line is not up is waited for
// up to its read timeout, and only while fewer than a majority are
// subscribed: the call then waits without it, and looks there without
// queueing, until its subscription comes; then the call's next look
// queues there (a subscription dropped instead would leave the call
// never queued on that node, woken by none of its releases).
func (r *quorumLock) subscribe(ctx context.Context, _ *Client, always bool) (*subscribed, error) {
	ready := make([]bool, len(r.nodes))
	for i, n := range r.q.nodes {
		ready[i] = n.grants.ready()
		if !always && !ready[i] {
			return nil, nil
		}
	}
	wake := &anyWake{}
	replies, err := fanOut(ctx, r.c, r.c.cfg.watchdogLease, r.all(),
		func(ctx context.Context, i int) (*subscribed, error) {
			ctx, cancel := context.WithTimeout(ctx, r.q.answerWithin(i))
			defer cancel()
			return subscribeForGrants(ctx, r.q.nodes[i], r.nodes[i], true)
		},
		func(got []nodeReply[*subscribed]) bool { return subscribedAll(got, ready, r.q.majority) }, false,
		func(late nodeReply[*subscribed]) { r.join(wake, late) })
	joined := 0
	for _, rep := range replies {
		if r.join(wake, rep) {
			joined++
		}
	}
	if err != nil {
		wake.Close()
		return nil, err
	}
	if joined == 0 {
		return nil, r.q.unreachable(r.name(), nil)
	}
	return &subscribed{w: reentrant.Waiter{ID: randomHex(8)}, sub: wake, look: true}, nil
}

// join makes a node's subscription, if it was made, one of the call's:
// its waiter there is the one the call's looks queue as, and its
// deliveries wake the call. Once the call stopped waiting it is closed.
// It reports whether the subscription joined.
func (r *quorumLock) join(wake *anyWake, rep nodeReply[*subscribed]) bool {
	if rep.err != nil || rep.val == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !wake.add(rep.val.sub) {
		rep.val.close()
		return false
	}
	r.waiters[rep.node] = rep.val.w
	return true
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
