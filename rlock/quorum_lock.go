package rlock

import (
	"context"
	"maps"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/batonlock/baton/reentrant"
)

// quorumLock is a lock across a quorum's nodes: the plain lock of the same
// name on each, with the same owner and, once a hold is made, the same
// token, which is its ID on every node that holds it (see "Quorum mode" in
// reentrant's doc). It is the resource of one call, and of the hold it
// makes: releases, renewals and re-entries name the hold by owner and
// token alone, and go to every node; the waiting state below is the
// call's.
type quorumLock struct {
	c     *Client // the quorum's, whose clean-ups these are
	q     *quorum
	nodes []*plainLock // the lock on each node, in its Client's namespace

	mu sync.Mutex // guards the waiting call's state: waiters, kept, waitsOn and down
	// waiters is the call's waiter on each node, zero where it did not
	// subscribe.
	waiters []reentrant.Waiter
	// kept is the grants the waiting call keeps between looks (node →
	// token): the first nodes in order that grant it, up to the first
	// that answers and does not (see acquire).
	kept map[int]uint64
	// waitsOn is the node the waiting call waits on: where its last
	// look's kept prefix stopped (0 before its first look), or len(nodes)
	// where it has no waiter there. Its looks queue it on that node and
	// those before it only (see lookAs and waitOn).
	waitsOn int
	// down is the nodes that failed the call's last look (see lookAs).
	down map[int]bool

	// joining is the nodes of the hold whose raise to its token goes on
	// after the look returned: a release of such a node settles its join
	// first (see release). releasing is set once a release of the hold
	// has begun: a node that would join after that is given back (see
	// joinLate). Both are guarded by mu.
	joining   map[int]*join
	releasing bool
	// left is set, under mu, once the call's leave of the nodes it does
	// not hold is about to be sent: a late reply of a look then leaves
	// its node again (see leaveLate), and a give-back wakes a waiter
	// (see giveBackOn).
	left bool
	// backs is the call's give-backs under way on each node, guarded by
	// mu: a look acquires on a node only once those there have ended (see
	// takeOn).
	backs []backs
	// meetings is how many of the call's looks in a row met another call
	// of its owner, guarded by mu (see untilNextLook).
	meetings int
}

// backs counts the give-backs under way on one node; idle is closed when
// the count falls to 0, and made anew when it leaves 0.
type backs struct {
	n    int
	idle chan struct{}
}

// lock is the quorum lock called name, or says why it cannot be
// (ErrInvalidName). It sends nothing.
func (q *quorum) lock(c *Client, name string) (*quorumLock, error) {
	r := &quorumLock{c: c, q: q, waiters: make([]reentrant.Waiter, len(q.nodes)), kept: map[int]uint64{},
		joining: map[int]*join{}, backs: make([]backs, len(q.nodes))}
	for _, n := range q.nodes {
		p, err := n.plainLock(name)
		if err != nil {
			return nil, err
		}
		r.nodes = append(r.nodes, p)
	}
	return r, nil
}

func (r *quorumLock) id() resourceID { return r.nodes[0].id() }

func (r *quorumLock) name() string { return r.nodes[0].name() }

// claims is false: a quorum waiter takes every message as a nudge to look
// (subscribed.grants is false), never as a grant.
func (r *quorumLock) claims(reentrant.Grant) bool { return false }

// settle has nothing to end: each node's request key keeps a request's
// result for its own TTL, as in baton's format.
func (r *quorumLock) settle(string) {}

func (r *quorumLock) waiter(id, _ string) reentrant.Waiter { return reentrant.Waiter{ID: id} }

// aliveTTL is the shortest of the nodes', so that a waiter's looks keep
// its liveness key on every node that judges liveness by key.
func (r *quorumLock) aliveTTL() time.Duration {
	var ttl time.Duration
	for _, p := range r.nodes {
		if t := p.aliveTTL(); t > 0 && (ttl == 0 || t < ttl) {
			ttl = t
		}
	}
	return ttl
}

// all is every node's index.
func (r *quorumLock) all() []int {
	idx := make([]int, len(r.nodes))
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// nodeTake is one node's answer to a look: granted with token and
// count, or held by another owner for ttl, or found (stale) holding a
// grant of token that the look does not count (see takeOn).
type nodeTake struct {
	granted bool
	stale   bool
	token   uint64
	count   int64
	ttl     time.Duration
}

// reentered says the node granted by re-entering a hold the owner had
// there already (only a given owner can): a new grant's count is 1, a
// re-entry's above it. token is then that hold's ID.
func (t nodeTake) reentered() bool { return t.granted && t.count > 1 }

// takeOn is round 1 on node i: the node's acquire, as waiter w (the
// call's waiter there, if any, as lookAs gives it); a grant kept from an
// earlier look is confirmed by a renewal instead, which counts nothing
// twice and moves its lease from now, as the acquire of a new grant does.
//
// An owner made for the call (newOwner) holds at most one grant on a
// node, which every look of the call would find there. One that an
// earlier look gives back must not count in this one: the give-back's
// release would take the node out of the hold this look makes. So the
// acquire waits for the call's give-backs on the node to end; and a grant
// it finds there all the same (the owner's hold reported, not a grant
// handed to the waiter: an earlier look's whose reply came late, or a
// resent acquire's) is stale: given back, not counted. A release names
// the hold's token, so a second give-back of it changes nothing.
func (r *quorumLock) takeOn(ctx context.Context, i int, call acquireCall, w reentrant.Waiter) (nodeTake, error) {
	ctx, cancel := context.WithTimeout(ctx, r.q.answerWithin(i))
	defer cancel()
	if err := r.afterBacks(ctx, i); err != nil {
		return nodeTake{}, err
	}
	r.mu.Lock()
	t, kept := r.kept[i]
	r.mu.Unlock()
	call.waiter = w
	if kept {
		ok, err := r.nodes[i].renew(ctx, call.owner, t, call.lease)
		return nodeTake{granted: ok, token: t, count: 1}, err
	}
	res, err := r.nodes[i].acquire(ctx, call)
	if err != nil {
		return nodeTake{}, err
	}
	if res.Acquired && res.Reported && !res.Claimed && call.newOwner {
		return nodeTake{stale: true, token: res.Token}, nil
	}
	return nodeTake{granted: res.Acquired, token: res.Token, count: res.HoldCount, ttl: res.HolderTTL}, nil
}

// afterBacks waits until the call's give-backs on node i have ended, or
// ctx ends.
func (r *quorumLock) afterBacks(ctx context.Context, i int) error {
	r.mu.Lock()
	idle := r.backs[i].idle
	busy := r.backs[i].n > 0
	r.mu.Unlock()
	if !busy {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// acquire is one look of a call, or a re-entry (call.hold): see
// acquireNew and reenter. Every error it returns is givenBack: the call
// has nothing of it to undo.
func (r *quorumLock) acquire(ctx context.Context, call acquireCall) (reentrant.AcquireResult, error) {
	if call.hold != 0 {
		return r.reenter(ctx, call)
	}
	return r.acquireNew(ctx, call)
}

// acquireNew is one look: round 1 on every node at once, then, with a
// majority granted, round 2 (commit). It takes a majority or gives back
// what it took, except that a waiting call keeps the grants of the first
// nodes in order (skipping those that failed) up to the first that
// answered without one: so of any two waiters, at most one keeps a grant
// while it waits (both would hold the first node that answers them both),
// and it waits only for the holder. That is the tie-break of a split vote:
// no two waiters hold parts of the lock while waiting for each other. A
// waiting call queues only up to the node it waits on (see waitOn): a
// release past it goes to a waiter that can keep it.
//
// Round 1 goes on listening once a majority granted, as long again as
// that took (see fanOut's linger), so that a node a little slower than
// the others grants under a token T covers too: a grant that comes after
// the look stopped listening carries a token above T (a later clock) and
// cannot join the hold (see joinLate). A hold made on a bare majority
// would end with the loss of any one of its nodes.
//
// A given owner (WithOwner) may hold the lock already: a node that
// re-enters that hold (see nodeTake.reentered) names it by its ID, which
// nothing may change, since the owner's other calls name it so. A
// majority re-entering one hold is a re-entry of it, and every other
// grant is given back; a re-entry short of that is given back, and only
// new grants make a new hold.
func (r *quorumLock) acquireNew(ctx context.Context, call acquireCall) (reentrant.AcquireResult, error) {
	start := time.Now()
	out := &outcome{}
	defer out.end()
	as, down := r.lookAs()
	replies, err := fanOut(ctx, r.c, call.lease, r.all(),
		func(ctx context.Context, i int) (nodeTake, error) { return r.takeOn(ctx, i, call, as[i]) },
		func(got []nodeReply[nodeTake]) bool { _, ok := r.agreed(got); return ok || r.heardAllBut(got, down) }, true,
		func(late nodeReply[nodeTake]) { r.settleLate(late, call, out) })
	held, agreed := r.agreed(replies)
	fresh, failed := map[int]uint64{}, unheard(replies, down)
	var ttls []time.Duration
	count := int64(1)
	met := false // a re-entry of a hold of the owner's that this look does not keep
	for _, rep := range replies {
		switch {
		case rep.err != nil:
			failed[rep.node] = rep.err
			r.settleLate(rep, call, out) // it may have run: undo it
		case rep.val.stale:
			r.giveBackOn(rep.node, call, rep.val.token, rep.val.token, newRequestID())
		case !rep.val.granted:
			ttls = append(ttls, rep.val.ttl)
		case held != 0 && rep.val.reentered() && rep.val.token == held:
			count = max(count, rep.val.count)
		case held != 0 || rep.val.reentered():
			met = met || rep.val.reentered()
			r.giveBackOn(rep.node, call, rep.val.token, rep.val.token, newRequestID())
		default:
			fresh[rep.node] = rep.val.token
		}
	}
	r.mu.Lock()
	r.down = map[int]bool{}
	for i := range failed {
		r.down[i] = true
	}
	r.mu.Unlock()
	switch {
	case err != nil:
		return reentrant.AcquireResult{}, r.fail(call, fresh, err)
	case held != 0:
		return r.reentered(call, held, count, out), nil
	case agreed:
		return r.commit(ctx, call, start, answeredWithin(replies), fresh, out)
	case len(r.nodes)-len(failed) < r.q.majority:
		return reentrant.AcquireResult{}, r.fail(call, fresh, r.q.unreachable(r.name(), failed))
	}
	if r.waitOn(call, r.keepPrefix(call, fresh, failed), as, failed) {
		// Not queued where it now waits: look again at once (a holder TTL
		// of 0), queued there.
		return reentrant.AcquireResult{}, nil
	}
	return reentrant.AcquireResult{HolderTTL: r.untilNextLook(soonest(ttls), met, answeredWithin(replies))}, nil
}

// answeredWithin is how long the nodes that answered a round took, the
// slowest of them: a wait for a node that failed it (paused, up to its
// read timeout) says nothing of the pace of the other calls' looks.
func answeredWithin[T any](replies []nodeReply[T]) time.Duration {
	var took time.Duration
	for _, rep := range replies {
		if rep.err == nil {
			took = max(took, rep.took)
		}
	}
	return took
}

// maxMeetingDoublings bounds the doubling of untilNextLook's wait: 2^6
// looks' time, about 64 round trips, before lookEvery bounds it.
const maxMeetingDoublings = 6

// untilNextLook is when a look that made no hold, whose answering nodes
// took took (see answeredWithin), should be
// followed by the next: soon, from the holders' leases (see soonest),
// unless it met another call of its owner (met: a grant of that call's
// that it re-entered, or that a raise found re-entered). Those calls send
// no message when they commit or give back, so a wait for one would last
// until lookEvery. The look is due again instead after a random wait of
// one to two times took, about what the other call's look takes, doubled
// for each earlier look in a row that met one: the calls' looks drift
// apart until one of them looks alone, and makes the hold the others then
// re-enter.
func (r *quorumLock) untilNextLook(soon time.Duration, met bool, took time.Duration) time.Duration {
	r.mu.Lock()
	n := r.meetings
	if r.meetings = 0; met {
		r.meetings = n + 1
	}
	r.mu.Unlock()
	if !met {
		return soon
	}
	wait := took << min(n, maxMeetingDoublings)
	wait += rand.N(wait + 1)
	if soon > 0 {
		// A lease running out sooner; 0 (look at once) is what the
		// meeting puts off.
		wait = min(wait, soon)
	}
	return wait
}

// agreed is the hold a majority of got's grants agree on: the existing
// hold of ID held that they re-entered, or, with held 0, a new one of
// their new grants. ok is false when neither has a majority (no two can:
// any two majorities share a node, which answers once). Adding replies
// never turns ok back to false.
func (r *quorumLock) agreed(got []nodeReply[nodeTake]) (held uint64, ok bool) {
	fresh, again := 0, map[uint64]int{}
	for _, rep := range got {
		switch {
		case rep.err != nil || !rep.val.granted:
		case rep.val.reentered():
			if again[rep.val.token]++; again[rep.val.token] >= r.q.majority {
				return rep.val.token, true
			}
		default:
			fresh++
		}
	}
	return 0, fresh >= r.q.majority
}

// reentered ends a look that re-entered the existing hold of ID held on
// a majority of the nodes, count its highest hold count there: the hold,
// its token and its ID stay as they are. The look's new grants, kept ones
// included, were given back (see acquireNew).
func (r *quorumLock) reentered(call acquireCall, held uint64, count int64, out *outcome) reentrant.AcquireResult {
	r.mu.Lock()
	r.kept = map[int]uint64{}
	r.mu.Unlock()
	out.made, out.reentry, out.token = true, true, held
	r.leaveOthers(call, nil)
	return reentrant.AcquireResult{Acquired: true, HoldCount: count, Token: held}
}

// soonest is when a look should next be due, from the holders' remaining
// leases on the nodes that refused: the soonest to run out, or negative
// (no expiry: see untilExpiry) when none will.
func soonest(ttls []time.Duration) time.Duration {
	soon := time.Duration(-1)
	for _, t := range ttls {
		if t >= 0 && (soon < 0 || t < soon) {
			soon = t
		}
	}
	return soon
}

// commit is round 2: the token T is the largest of the grants' tokens,
// each at least one above its node's counter, so above every token a
// majority committed before (see "Quorum mode" in reentrant's doc). Each
// granted node raises its counter to T while the hold there is still
// this owner's; T counts once a majority has, within the validity from
// start. What it does not keep it gives back.
func (r *quorumLock) commit(ctx context.Context, call acquireCall, start time.Time, took time.Duration, granted map[int]uint64, out *outcome) (reentrant.AcquireResult, error) {
	var T uint64
	var nodes []int
	for i, t := range granted {
		T = max(T, t)
		nodes = append(nodes, i)
	}
	out.token = T
	// Every copy of a node's raise, a give-back's and a release's too, goes
	// under one request ID: the first to run decides for all (see join).
	reqs := map[int]string{}
	for _, i := range nodes {
		reqs[i] = newRequestID()
	}
	replies, err := fanOut(ctx, r.c, call.lease, nodes,
		func(ctx context.Context, i int) (uint64, error) {
			return r.nodes[i].keys.Raise(ctx, r.nodes[i].rdb, call.owner, granted[i], T, call.lease, reqs[i])
		},
		func(got []nodeReply[uint64]) bool { return countRaised(got, T) >= r.q.majority }, false,
		func(late nodeReply[uint64]) { r.finishRaise(late.node, call, granted[late.node], reqs[late.node], out) })
	committed, failed := map[int]bool{}, map[int]error{}
	unanswered := maps.Clone(granted)
	met := false // a grant that another call of the owner re-entered
	for _, rep := range replies {
		delete(unanswered, rep.node)
		switch {
		case rep.err != nil:
			failed[rep.node] = rep.err
		case rep.val == T:
			committed[rep.node] = true
		case rep.val != 0:
			met = true
		}
	}
	out.made = err == nil && len(committed) >= r.q.majority && time.Now().Before(validUntil(start, call.lease))
	r.mu.Lock()
	r.kept = map[int]uint64{}
	if out.made {
		// Their raises are in flight, and finish late (finishRaise).
		r.joining = map[int]*join{}
		for i, from := range unanswered {
			r.joining[i] = newJoin(from, reqs[i])
		}
	}
	r.mu.Unlock()
	if !out.made {
		// Those that answered are given back here, the rest when they do.
		for _, rep := range replies {
			r.giveBackOn(rep.node, call, granted[rep.node], T, reqs[rep.node])
		}
		switch {
		case err != nil:
			return reentrant.AcquireResult{}, r.fail(call, nil, err)
		case len(failed) > len(r.nodes)-r.q.majority:
			return reentrant.AcquireResult{}, r.fail(call, nil, r.q.unreachable(r.name(), failed))
		}
		// Look again at once (a holder TTL of 0), unless another call of
		// the owner is making its hold.
		return reentrant.AcquireResult{HolderTTL: r.untilNextLook(0, met, took+answeredWithin(replies))}, nil
	}
	for _, rep := range replies {
		if !committed[rep.node] {
			r.giveBackOn(rep.node, call, granted[rep.node], T, reqs[rep.node])
		}
	}
	r.leaveOthers(call, granted)
	return reentrant.AcquireResult{Acquired: true, HoldCount: 1, Token: T}, nil
}

// countRaised counts the replies of nodes that hold the hold under T.
func countRaised(got []nodeReply[uint64], T uint64) int {
	n := 0
	for _, r := range got {
		if r.err == nil && r.val == T {
			n++
		}
	}
	return n
}
