package rlock

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/batonlock/baton/reentrant"
	"github.com/batonlock/baton/watchdog"
)

// givenBack is the error of a quorum call that has given back, or goes on
// giving back in the background, everything it took on every node: its
// caller has nothing to undo (see isServerReply).
type givenBack struct{ error }

func (g givenBack) Unwrap() error { return g.error }

// tally is a quorum's count of one call's answers on its nodes.
type tally struct {
	ok, not int           // answered yes, answered no
	failed  map[int]error // node → its error
}

// count adds a node's answer.
func (t *tally) count(node int, yes bool, err error) {
	switch {
	case err != nil:
		if t.failed == nil {
			t.failed = map[int]error{}
		}
		t.failed[node] = err
	case yes:
		t.ok++
	default:
		t.not++
	}
}

// verdict is the quorum's answer: yes once a majority said yes, no once
// too many said no for a majority to have said yes, and otherwise
// ErrNoQuorum naming the nodes that failed.
func (r *quorumLock) verdict(t tally) (bool, error) {
	switch {
	case t.ok >= r.q.majority:
		return true, nil
	case t.not > len(r.nodes)-r.q.majority:
		return false, nil
	}
	return false, r.q.unreachable(r.name(), t.failed)
}

// everyNode runs call on every node at once and waits for every answer,
// bounded by ctx; answers that come after ctx ended are dropped, as a
// lost reply would be: what it sends is named by owner and token, and its
// callers retry or give back by the same names.
func everyNode[T any](ctx context.Context, r *quorumLock, call func(ctx context.Context, i int) (T, error)) ([]nodeReply[T], error) {
	return fanOut(ctx, r.c, r.c.cfg.watchdogLease, r.all(), call,
		func([]nodeReply[T]) bool { return false }, false, func(nodeReply[T]) {})
}

// untilVerdict runs call on every node at once and returns once the
// answers so far decide the verdict (yes says what a yes is), or ctx
// ends: a node that is paused or slow delays no call its majority can
// answer. late gets the answers after that.
func untilVerdict[T any](ctx context.Context, r *quorumLock, call func(ctx context.Context, i int) (T, error), yes func(T) bool, late func(nodeReply[T])) ([]nodeReply[T], tally, error) {
	tallyOf := func(got []nodeReply[T]) tally {
		var t tally
		for _, rep := range got {
			t.count(rep.node, yes(rep.val), rep.err)
		}
		return t
	}
	replies, err := fanOut(ctx, r.c, r.c.cfg.watchdogLease, r.all(), call,
		func(got []nodeReply[T]) bool { return r.decided(tallyOf(got)) }, false, late)
	return replies, tallyOf(replies), err
}

// decided says whether t decides the verdict, whatever the nodes yet to
// answer say.
func (r *quorumLock) decided(t tally) bool {
	return t.ok >= r.q.majority || t.not+len(t.failed) > len(r.nodes)-r.q.majority
}

// release gives back one count of owner's hold of token id on every node;
// each node's release replays under requestID. It is confirmed once a
// majority confirmed it; it found the hold not held once too many nodes
// did for a majority to hold it.
func (r *quorumLock) release(ctx context.Context, owner string, id uint64, requestID string) (reentrant.ReleaseResult, error) {
	// A node still joining the hold is released where its raise made it
	// the hold's (see joined). The counter's expiry only rises: the
	// watchdog's lease keeps it past id's time, which is all a released
	// hold needs.
	r.mu.Lock()
	r.releasing = true
	joining := maps.Clone(r.joining)
	r.mu.Unlock()
	releaseOn := func(ctx context.Context, i int) (reentrant.ReleaseResult, error) {
		p := r.nodes[i]
		if j, ok := joining[i]; ok {
			switch joined, err := r.joined(ctx, i, owner, j, id, r.c.cfg.watchdogLease); {
			case err != nil:
				return reentrant.ReleaseResult{}, err
			case joined != id:
				return reentrant.ReleaseResult{Status: reentrant.NotHeld}, nil
			}
		}
		// The hold's own release wakes a waiter that left a wake record
		// where it frees the node (see lookAs); a give-back of a call
		// still waiting does not.
		return waking{p}.release(ctx, owner, id, requestID)
	}
	// A node's release that failed, or answered after the verdict, is
	// resent under the same request ID until it is answered: the hold
	// there would otherwise stay until its lease ran out.
	resend := func(i int) {
		r.c.background.run(r.c.cfg.watchdogLease, func(ctx context.Context) {
			_ = untilAnswered(ctx, func(ctx context.Context) error {
				_, err := releaseOn(ctx, i)
				return err
			})
		})
	}
	held := func(res reentrant.ReleaseResult) bool { return res.Status != reentrant.NotHeld }
	replies, t, err := untilVerdict(ctx, r, releaseOn, held, func(late nodeReply[reentrant.ReleaseResult]) {
		if late.err != nil {
			resend(late.node)
		}
	})
	if err != nil {
		return reentrant.ReleaseResult{}, err
	}
	res := reentrant.ReleaseResult{Status: reentrant.NotHeld}
	for _, rep := range replies {
		if rep.err == nil && held(rep.val) {
			res = reentrant.ReleaseResult{Status: rep.val.Status, Remaining: max(res.Remaining, rep.val.Remaining)}
		}
	}
	ok, err := r.verdict(t)
	switch {
	case err != nil:
		return reentrant.ReleaseResult{}, err
	case !ok:
		return reentrant.ReleaseResult{Status: reentrant.NotHeld}, nil
	}
	for i := range t.failed {
		resend(i)
	}
	return res, nil
}

// renew renews owner's hold of token id on every node, and reports it held
// once a majority renewed it (see verdict).
func (r *quorumLock) renew(ctx context.Context, owner string, id uint64, lease time.Duration) (bool, error) {
	_, t, err := untilVerdict(ctx, r, func(ctx context.Context, i int) (bool, error) {
		return r.nodes[i].renew(ctx, owner, id, lease)
	}, func(ok bool) bool { return ok }, func(nodeReply[bool]) {})
	if err != nil {
		return false, err
	}
	return r.verdict(t)
}

// reenter re-enters owner's hold of token call.hold on every node at once:
// re-entry is counted on each node, as on one. It holds once a majority
// re-entered; a hold too few nodes keep is gone (HoldGone), and the counts
// it added are given back. Its errors are givenBack.
func (r *quorumLock) reenter(ctx context.Context, call acquireCall) (reentrant.AcquireResult, error) {
	// A node's re-entry answered after the verdict counts there if the
	// re-entry holds, as its release will go there too; it is undone
	// otherwise.
	out := &outcome{}
	defer out.end()
	replies, t, err := untilVerdict(ctx, r, func(ctx context.Context, i int) (reentrant.AcquireResult, error) {
		return r.nodes[i].acquire(ctx, call)
	}, func(res reentrant.AcquireResult) bool { return res.Acquired }, func(late nodeReply[reentrant.AcquireResult]) {
		out.then(func() {
			if !out.made || late.err != nil {
				r.undoReentry(late, call)
			}
		})
	})
	var count int64
	for _, rep := range replies {
		count = max(count, rep.val.HoldCount)
	}
	held, verdict := r.verdict(t)
	if out.made = err == nil && held; out.made {
		return reentrant.AcquireResult{Acquired: true, HoldCount: count, Token: call.hold}, nil
	}
	for _, rep := range replies {
		r.undoReentry(rep, call)
	}
	switch {
	case err != nil:
		return reentrant.AcquireResult{}, givenBack{err}
	case verdict != nil:
		return reentrant.AcquireResult{}, givenBack{verdict}
	}
	return reentrant.AcquireResult{HoldGone: true}, nil
}

// undoReentry gives back the count a re-entry added on one node, or may
// have (a lost reply: its replay by request ID tells).
func (r *quorumLock) undoReentry(rep nodeReply[reentrant.AcquireResult], call acquireCall) {
	if rep.err == nil && !rep.val.Acquired {
		return
	}
	p := r.nodes[rep.node]
	r.c.background.run(call.lease, func(ctx context.Context) {
		if rep.err == nil {
			releaseRetrying(ctx, p, call.owner, call.hold)
			return
		}
		undoAcquire(ctx, p, call.owner, func(ctx context.Context) (reentrant.AcquireResult, error) {
			return p.acquire(ctx, call)
		})
	})
}

// leave takes the call's waiter out of every node's queue, passing on a
// grant it was handed there, and gives back the grants it kept.
func (r *quorumLock) leave(ctx context.Context, _ reentrant.Waiter, owner string, lease time.Duration, newOwner bool) error {
	r.mu.Lock()
	waiters := slices.Clone(r.waiters) // a late subscription joins under mu
	r.left = true                      // first: the call's give-backs wake
	r.mu.Unlock()
	r.giveUp(acquireCall{owner: owner, lease: lease, newOwner: newOwner}, nil)
	replies, err := everyNode(ctx, r, func(ctx context.Context, i int) (struct{}, error) {
		if waiters[i].ID == "" {
			return struct{}{}, nil
		}
		return struct{}{}, r.nodes[i].leave(ctx, waiters[i], owner, lease, newOwner)
	})
	for _, rep := range replies {
		err = errors.Join(err, rep.err)
	}
	return err
}

// renewQuorum is the watchdog's batch in quorum mode: one renewal pipeline
// per node (the holds grouped by slot, as on one), all at once, until
// every hold has its verdict. A hold is renewed once a majority renewed
// it; lost (watchdog.ErrNotHeld) once too many nodes found it not held
// for a majority to hold it.
func (c *Client) renewQuorum(ctx context.Context, batch []*hold, lease time.Duration) []error {
	r := batch[0].res.(*quorumLock)
	tallies := func(got []nodeReply[[]error]) []tally {
		ts := make([]tally, len(batch))
		for _, rep := range got {
			for k := range batch {
				switch err := errors.Join(rep.err, rep.val[k]); {
				case errors.Is(err, watchdog.ErrNotHeld):
					ts[k].count(rep.node, false, nil)
				default:
					ts[k].count(rep.node, err == nil, err)
				}
			}
		}
		return ts
	}
	replies, err := fanOut(ctx, c, lease, r.all(),
		func(ctx context.Context, i int) ([]error, error) {
			return c.quorum.nodes[i].renewHolds(ctx, batch, lease, func(h *hold) batonResource { return h.res.(*quorumLock).nodes[i] }), nil
		},
		func(got []nodeReply[[]error]) bool {
			return !slices.ContainsFunc(tallies(got), func(t tally) bool { return !r.decided(t) })
		}, false, func(nodeReply[[]error]) {})
	errs := make([]error, len(batch))
	for k, t := range tallies(replies) {
		held, verr := batch[k].res.(*quorumLock).verdict(t)
		switch {
		case verr != nil:
			errs[k] = errors.Join(verr, err)
		case !held:
			errs[k] = fmt.Errorf("%w: renew %q", watchdog.ErrNotHeld, batch[k].res.name())
		}
	}
	return errs
}
