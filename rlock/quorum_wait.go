package rlock

import (
	"context"
	"errors"
	"slices"

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
// queues there, if the call waits on that node or one past it (a
// subscription dropped instead would leave the call never queued on that
// node, woken by none of its releases). A join that comes during a look
// makes the call look again at once, queued (see waitOn).
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
	joined, failed := 0, map[int]error{}
	for _, rep := range replies {
		if r.join(wake, rep) {
			joined++
		} else if rep.err != nil {
			failed[rep.node] = rep.err
		}
	}
	if err != nil {
		wake.Close()
		return nil, err
	}
	if joined == 0 {
		// A Client that began to close refuses every subscription: that is
		// ErrClosed, not a quorum out of reach.
		if err := r.c.checkOpen(); err != nil {
			return nil, err
		}
		return nil, r.q.unreachable(r.name(), failed)
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

// keepPrefix keeps, for a waiting call, the grants of the first nodes in
// order up to the first that answered without one (see acquireNew), and
// gives back the others. It returns that first node, the one the call now
// waits on (len(r.nodes) for none).
func (r *quorumLock) keepPrefix(call acquireCall, granted map[int]uint64, failed map[int]error) int {
	keep := map[int]uint64{}
	stop := len(r.nodes)
	for i := range r.nodes {
		if _, ok := failed[i]; ok {
			continue
		}
		t, ok := granted[i]
		if !ok || call.waiter.ID == "" {
			stop = i
			break
		}
		keep[i] = t
	}
	r.mu.Lock()
	r.kept = keep
	r.mu.Unlock()
	for i, t := range granted {
		if _, ok := keep[i]; !ok {
			r.giveBackOn(i, call, t, t, newRequestID())
		}
	}
	return stop
}

// lookAs is the waiter a look goes as on each node: the call's waiter
// there (none where it did not subscribe), queued only up to the node the
// call waits on. Past that node the call could keep no grant, so it does
// not queue there: a release there goes to a waiter that can keep it, not
// down a queue of waiters that would each look and give it back. It still
// looks there as its waiter (Waiter.Unqueued), so that a grant it was
// handed while queued there is claimed, never taken unclaimed, and leaves
// a wake record there: a release that frees that node wakes one such
// waiter, as the node it waits on may have paused since its look (then
// no release there wakes it). Every look takes out the record it may
// have left before (Waiter.Wakes), so none stays on a node the call ends
// holding (its leave goes only to the others).
//
// down is the nodes that failed the call's last look: this look waits for
// them only until every other node answered (see heardAllBut), and counts
// them failed if they have not by then. A paused node costs a waiting
// call one wait for it (up to its read timeout), not one per look: a
// split vote with it paused needs a second look at once (see waitOn).
func (r *quorumLock) lookAs() (as []reentrant.Waiter, down map[int]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	as = slices.Clone(r.waiters)
	for i := range as {
		as[i].Unqueued, as[i].Wakes = i > r.waitsOn, true
	}
	return as, r.down
}

// errUnheard is a node that failed a call's last look, and did not answer
// this one by the time every other node had.
var errUnheard = errors.New("no answer by the time the other nodes answered, after none to the look before")

// heardAllBut says whether got holds a reply of every node but those of
// down (a look's decision, with a majority's: see lookAs).
func (r *quorumLock) heardAllBut(got []nodeReply[nodeTake], down map[int]bool) bool {
	return len(down) > 0 && len(got)+len(unheard(got, down)) == len(r.nodes)
}

// unheard is the nodes of down that got holds no reply of, as failed.
func unheard(got []nodeReply[nodeTake], down map[int]bool) map[int]error {
	failed := map[int]error{}
	for i := range down {
		if !slices.ContainsFunc(got, func(r nodeReply[nodeTake]) bool { return r.node == i }) {
			failed[i] = errUnheard
		}
	}
	return failed
}

// waitOn makes node stop the one a waiting call waits on, and so queues
// on up to (see lookAs); where it has no waiter there (not subscribed),
// it queues on every node it has one, as any release may be the one it
// waits for. Its looks past that node are still looks as its waiter,
// unqueued: a grant it was handed there while it was queued is claimed by
// its next look (kept or given back with the prefix) or, once the call
// ends, given back by its leave; never taken by a look that does not
// claim it. So it needs no leave where it stops queueing, and waits on no
// node to stop.
//
// waitOn says whether the look just made, as as, left the call unqueued
// on a node it must now be queued on to be woken: one it waits on, that
// answered the look, does not grant it, and where it now has a waiter
// (its prefix grew past the nodes the look queued on, or a subscription
// joined after the look began). It must then look again, queued there.
// Each such look follows a change (a grant, or a subscription joined), so
// there are at most a few per wake-up.
func (r *quorumLock) waitOn(call acquireCall, stop int, as []reentrant.Waiter, failed map[int]error) (again bool) {
	if call.waiter.ID == "" {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if stop < len(r.nodes) && r.waiters[stop].ID == "" {
		stop = len(r.nodes)
	}
	r.waitsOn = stop
	for i := range min(stop+1, len(r.nodes)) {
		_, kept := r.kept[i]
		_, down := failed[i]
		if !kept && !down && r.waiters[i].ID != "" && (as[i].ID == "" || as[i].Unqueued) {
			return true
		}
	}
	return false
}
