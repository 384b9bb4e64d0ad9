package rlock

// The clean-ups of quorum mode: what a look gives back, or joins to its
// hold, of the replies it did not wait for or that failed.

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/batonlock/baton/reentrant"
)

// fail ends a call whose look failed with err: it gives back every grant
// (giveUp) and leaves every node's queue, both in the background, and
// returns err as givenBack.
func (r *quorumLock) fail(call acquireCall, granted map[int]uint64, err error) error {
	r.leaveOthers(call, nil) // first: the call has left, its give-backs wake
	r.giveUp(call, granted)
	return givenBack{err}
}

// giveUp gives back every grant of a look that takes nothing, and the
// grants kept before it; the call's waiters stay queued (its leave takes
// them out).
func (r *quorumLock) giveUp(call acquireCall, granted map[int]uint64) {
	r.mu.Lock()
	kept := r.kept
	r.kept = map[int]uint64{}
	r.mu.Unlock()
	for i, t := range kept {
		if _, ok := granted[i]; !ok {
			r.giveBackOn(i, call, t, t, newRequestID())
		}
	}
	for i, t := range granted {
		r.giveBackOn(i, call, t, t, newRequestID())
	}
}

// outcome is what a look made, for the replies that come after it
// stopped listening: what they do waits for the look's return (see then).
type outcome struct {
	mu    sync.Mutex // guards ended and after
	ended bool       // the look has returned
	after []func()   // what waits for the look's return: end runs it

	// Set by the look before it returns; read once it has.
	made    bool   // it made a hold, or re-entered one
	reentry bool   // the hold was there before: the look re-entered it
	token   uint64 // the hold's token, when made
}

// then runs f once the look has returned: now if it has, or else when it
// does (end), on the look's goroutine. It never waits: a late reply may
// be handed on on the look's own goroutine (fanOut runs its handler there
// once Close has begun), where a wait for the look would never end.
func (o *outcome) then(f func()) {
	o.mu.Lock()
	if !o.ended {
		o.after = append(o.after, f)
		o.mu.Unlock()
		return
	}
	o.mu.Unlock()
	f()
}

// end is the look's return, once made, reentry and token are final: it
// runs what waited for it.
func (o *outcome) end() {
	o.mu.Lock()
	o.ended = true
	after := o.after
	o.after = nil
	o.mu.Unlock()
	for _, f := range after {
		f()
	}
}

// settleLate deals with a round-1 reply that came after its look stopped
// listening, or failed: a grant joins the hold the look made, if any (see
// joinLate); a failed acquire may have run, so it is undone (see undoOn);
// any other may have queued the call's waiter, or left its wake record,
// after the call left (see leaveLate).
func (r *quorumLock) settleLate(rep nodeReply[nodeTake], call acquireCall, out *outcome) {
	switch {
	case rep.err != nil:
		r.c.background.run(call.lease, func(ctx context.Context) { r.undoOn(ctx, rep.node, call) })
	case rep.val.stale:
		r.giveBackOn(rep.node, call, rep.val.token, rep.val.token, newRequestID())
	case rep.val.granted:
		r.joinLate(rep.node, call, rep.val.token, rep.val.reentered(), out)
	default:
		r.leaveLate(rep.node, call)
	}
}

// leaveLate leaves node i again where the call has left already (left):
// its look's acquire there ran before this reply came, but perhaps after
// the leave, which then found no queue place or wake record to take out,
// and nothing would take out that record until it runs out. A leave not
// yet sent when left is read runs after the acquire, and takes it out.
func (r *quorumLock) leaveLate(i int, call acquireCall) {
	r.mu.Lock()
	left, w := r.left, r.waiters[i]
	r.mu.Unlock()
	if !left || w.ID == "" {
		return
	}
	r.leaveOn(i, w, call)
}

// joinLate makes node i's hold, granted under token from but answered
// after its look stopped listening, part of the hold the look made: its
// counter is raised to the hold's token, by which the hold's renewals and
// release name every node. So a hold is on every node that granted it,
// not only on the majority that answered first, and outlives the loss of
// any minority. The node is given back instead where the look made no
// hold, or whose token is above the hold's, or once a release of the hold
// has been sent (it may have reached the node before the raise, and found
// nothing there, and a release that began before the node joined does
// not know of it).
//
// A re-entry (reentered: from is the ID of a hold the owner had there) is
// never raised, which would take that hold's ID from the owner's other
// calls: it counts in the hold where the look re-entered that same hold
// (the hold's release goes to every node; one owner's counts are alike,
// so its order against them does not matter), and is given back
// otherwise. A new grant joins no re-entered hold: it is given back.
func (r *quorumLock) joinLate(i int, call acquireCall, from uint64, reentered bool, out *outcome) {
	out.then(func() {
		switch {
		case reentered:
			if !out.made || !out.reentry || from != out.token {
				r.giveBackOn(i, call, from, from, newRequestID())
			}
		// A counter is never lowered: a grant above the hold's token
		// cannot join it.
		case !out.made || from > out.token:
			// Round 2 may have raised it (a reply held back past the
			// look): the give-back raises it to the same token first.
			r.giveBackOn(i, call, from, max(from, out.token), newRequestID())
		case out.reentry:
			r.giveBackOn(i, call, from, from, newRequestID())
		default:
			r.mu.Lock()
			releasing := r.releasing
			if !releasing {
				r.joining[i] = newJoin(from, newRequestID())
			}
			r.mu.Unlock()
			if releasing { // the release did not know of the node
				r.giveBackOn(i, call, from, out.token, newRequestID())
				return
			}
			r.raiseJoining(i, call, out.token)
		}
	})
}

// finishRaise ends round 2 on node i, granted under from, whose reply
// came after commit stopped listening: where the look made the hold, the
// node is joining it (commit said so), and its raise is resent until
// answered (raiseJoining); where it did not, it is given back, raised to
// the same token first (the raise may have run).
func (r *quorumLock) finishRaise(i int, call acquireCall, from uint64, req string, out *outcome) {
	out.then(func() {
		if !out.made {
			r.giveBackOn(i, call, from, out.token, req)
			return
		}
		r.raiseJoining(i, call, out.token)
	})
}

// join is a node joining a hold: granted under from, its raise to the
// hold's token is in flight. Every copy of that raise goes under req, and
// the first to run on the node decides for all (see Keys.Raise): so the
// copy a release sends itself answers at once, whatever became of the
// others' replies, and a copy late on the network replays that answer
// (for RequestTTL, as every replayed request) rather than move, after
// the release, the ID of a count another call of the owner has there.
// The first answer heard settles the join (see settleJoin).
type join struct {
	from uint64
	req  string

	mu      sync.Mutex // guards settled and id
	settled bool
	id      uint64 // the hold's ID on the node: its token, from (re-entered, not raised), or 0 (not held)
}

// newJoin is the join of a node granted under from, whose raise goes
// under request ID req.
func newJoin(from uint64, req string) *join { return &join{from: from, req: req} }

// answer is the answer that settled j, if one has.
func (j *join) answer() (id uint64, ok bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.id, j.settled
}

// settle records id as j's answer unless one was, and returns the answer
// recorded; first says it is id, recorded by this call.
func (j *join) settle(id uint64) (answer uint64, first bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.settled {
		j.settled, j.id = true, id
		return id, true
	}
	return j.id, false
}

// raiseJoining raises node i, joining the hold, to the hold's token to,
// in the background, resent until answered or its join is settled (see
// joined): a copy sent after that could run where the first copy's
// answer is no longer remembered. A raise not answered before its ctx
// ends joins nothing: after a lease (its bound) the node's grant, never
// renewed, has run out; after Close gave up, it runs out by itself.
func (r *quorumLock) raiseJoining(i int, call acquireCall, to uint64) {
	r.mu.Lock()
	j := r.joining[i]
	r.mu.Unlock()
	r.c.background.run(call.lease, func(ctx context.Context) {
		err := untilAnswered(ctx, func(ctx context.Context) error {
			_, err := r.joined(ctx, i, call.owner, j, to, call.lease)
			return err
		})
		if err != nil {
			r.settleJoin(i, call.owner, j, to, 0)
		}
	})
}

// joined is node i's answer to the raise of its join j to the hold's
// token to, for lease: the answer that settled j, or else that of a copy
// of the raise sent now, which the raise's first run on the node decides
// (see Keys.Raise), and which settles j.
func (r *quorumLock) joined(ctx context.Context, i int, owner string, j *join, to uint64, lease time.Duration) (uint64, error) {
	if id, ok := j.answer(); ok {
		return id, nil
	}
	p := r.nodes[i]
	id, err := p.keys.Raise(ctx, p.rdb, owner, j.from, to, lease, j.req)
	if err != nil {
		return 0, err
	}
	return r.settleJoin(i, owner, j, to, id), nil
}

// settleJoin settles node i's join j of the hold of token to with id, an
// answer to its raise, and returns the answer recorded. Where this call
// recorded it and the node holds the grant under from, not raised
// (another call of the owner re-entered it there first), the node is not
// the hold's, and its count is given back by from, in the background:
// the first hearer alone does so, so it is given back once.
func (r *quorumLock) settleJoin(i int, owner string, j *join, to, id uint64) uint64 {
	id, first := j.settle(id)
	if first && id != to && id != 0 {
		r.c.background.run(r.c.cfg.watchdogLease, func(ctx context.Context) {
			releaseRetrying(ctx, r.nodes[i], owner, id)
		})
	}
	return id
}

// undoOn undoes round 1 on node i after its reply was lost, as
// attempt.undo does (undoAcquire), once the waiter has left the node's
// queue.
func (r *quorumLock) undoOn(ctx context.Context, i int, call acquireCall) {
	r.mu.Lock()
	w := r.waiters[i]
	r.mu.Unlock()
	p := r.nodes[i]
	if w.ID != "" {
		_ = untilAnswered(ctx, func(ctx context.Context) error {
			return p.leave(ctx, w, call.owner, call.lease, call.newOwner)
		})
	}
	call.waiter = reentrant.Waiter{}
	undoAcquire(ctx, p, call.owner, func(ctx context.Context) (reentrant.AcquireResult, error) {
		return p.acquire(ctx, call)
	})
}

// giveBackOn gives back, in the background, the hold node i granted under
// token from, which round 2 may have raised to to: raising it again (a
// no-op if it was) tells whether the node still holds it, and by which
// ID: to, or from where another call of the owner re-entered it before
// it was raised (see Keys.Raise); the release then gives it back by that
// ID, which is that call's name for the hold too. req is the request ID
// of round 2's raise of the node, if one was sent (a new one if not): a
// copy of that raise that comes after this one replays its answer.
//
// The call's next look waits for it before it acquires on the node (see
// takeOn). Once the call has left (it looks no more), the give-back is a
// waking release: the grant may have come from a wake-up, which its
// waiter, gone, passes on this way; a call still waiting gives back
// quietly (see ReleaseWaking).
func (r *quorumLock) giveBackOn(i int, call acquireCall, from, to uint64, req string) {
	r.mu.Lock()
	if r.backs[i].n == 0 {
		r.backs[i].idle = make(chan struct{})
	}
	r.backs[i].n++
	r.mu.Unlock()
	r.c.background.run(call.lease, func(ctx context.Context) {
		defer func() {
			r.mu.Lock()
			if r.backs[i].n--; r.backs[i].n == 0 {
				close(r.backs[i].idle)
			}
			r.mu.Unlock()
		}()
		id := r.raiseOn(ctx, i, call, from, to, req)
		if id == 0 {
			return
		}
		r.mu.Lock()
		left := r.left
		r.mu.Unlock()
		var res resource = r.nodes[i]
		if left {
			res = waking{r.nodes[i]}
		}
		releaseRetrying(ctx, res, call.owner, id)
	})
}

// waking is a node's lock whose release wakes the oldest wake record's
// waiter where it frees the node (Keys.ReleaseWaking): a hold's own
// release, and the give-back of a call that has left.
type waking struct{ *plainLock }

func (w waking) release(ctx context.Context, owner string, id uint64, requestID string) (reentrant.ReleaseResult, error) {
	return w.keys.ReleaseWaking(ctx, w.rdb, owner, id, requestID)
}

// raiseOn raises owner's hold on node i from token from to to (see
// Keys.Raise) under request ID req, resent until the node answers or ctx
// ends, and returns the ID the node holds it under: to, from (re-entered,
// not raised), or 0 (not held, or no answer).
func (r *quorumLock) raiseOn(ctx context.Context, i int, call acquireCall, from, to uint64, req string) uint64 {
	p := r.nodes[i]
	var id uint64
	err := untilAnswered(ctx, func(ctx context.Context) (err error) {
		id, err = p.keys.Raise(ctx, p.rdb, call.owner, from, to, call.lease, req)
		return err
	})
	if err != nil {
		return 0
	}
	return id
}

// leaveOthers takes the call's waiter out of the queue of every node that
// did not grant it, in the background: a grant such a node hands it later
// would be passed on by its Client all the same (unclaimedGrant), one pass
// later.
func (r *quorumLock) leaveOthers(call acquireCall, granted map[int]uint64) {
	r.mu.Lock()
	waiters := slices.Clone(r.waiters)
	r.left = true
	r.mu.Unlock()
	for i, w := range waiters {
		if _, ok := granted[i]; ok || w.ID == "" {
			continue
		}
		r.leaveOn(i, w, call)
	}
}

// leaveOn takes waiter w out of node i's queue and wake records, in the
// background.
func (r *quorumLock) leaveOn(i int, w reentrant.Waiter, call acquireCall) {
	p := r.nodes[i]
	r.c.background.run(call.lease, func(ctx context.Context) {
		_ = untilAnswered(ctx, func(ctx context.Context) error {
			return p.leave(ctx, w, call.owner, call.lease, call.newOwner)
		})
	})
}
