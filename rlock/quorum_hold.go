package rlock

import (
	"context"
	"errors"
	"fmt"
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
// lost reply would be: release, renew and re-entry are named by owner and
// token, and their callers retry or give back by the same names.
func everyNode[T any](ctx context.Context, r *quorumLock, call func(ctx context.Context, i int) (T, error)) ([]nodeReply[T], error) {
	return fanOut(ctx, r.c, r.c.cfg.watchdogLease, r.all(), call,
		func([]nodeReply[T]) bool { return false }, func(nodeReply[T]) {})
}

// release gives back one count of owner's hold of token id on every node;
// each node's release replays under requestID. It is confirmed once a
// majority confirmed it; it found the hold not held once too many nodes
// did for a majority to hold it.
func (r *quorumLock) release(ctx context.Context, owner string, id uint64, requestID string) (reentrant.ReleaseResult, error) {
	replies, err := everyNode(ctx, r, func(ctx context.Context, i int) (reentrant.ReleaseResult, error) {
		return r.nodes[i].release(ctx, owner, id, requestID)
	})
	if err != nil {
		return reentrant.ReleaseResult{}, err
	}
	var t tally
	res := reentrant.ReleaseResult{Status: reentrant.NotHeld}
	for _, rep := range replies {
		held := rep.val.Status != reentrant.NotHeld
		t.count(rep.node, held, rep.err)
		if rep.err == nil && held {
			res = reentrant.ReleaseResult{Status: rep.val.Status, Remaining: max(res.Remaining, rep.val.Remaining)}
		}
	}
	held, err := r.verdict(t)
	switch {
	case err != nil:
		return reentrant.ReleaseResult{}, err
	case !held:
		return reentrant.ReleaseResult{Status: reentrant.NotHeld}, nil
	}
	for i := range t.failed {
		r.c.background.run(r.c.cfg.watchdogLease, func(ctx context.Context) {
			_ = untilAnswered(ctx, func(ctx context.Context) error {
				_, err := r.nodes[i].release(ctx, owner, id, requestID)
				return err
			})
		})
	}
	return res, nil
}

// renew renews owner's hold of token id on every node, and reports it held
// once a majority renewed it (see verdict).
func (r *quorumLock) renew(ctx context.Context, owner string, id uint64, lease time.Duration) (bool, error) {
	replies, err := everyNode(ctx, r, func(ctx context.Context, i int) (bool, error) {
		return r.nodes[i].renew(ctx, owner, id, lease)
	})
	if err != nil {
		return false, err
	}
	var t tally
	for _, rep := range replies {
		t.count(rep.node, rep.val, rep.err)
	}
	return r.verdict(t)
}

// reenter re-enters owner's hold of token call.hold on every node at once:
// re-entry is counted on each node, as on one. It holds once a majority
// re-entered; a hold fewer nodes keep is gone (HoldGone), and the counts it
// added are given back. Its errors are givenBack.
func (r *quorumLock) reenter(ctx context.Context, call acquireCall) (reentrant.AcquireResult, error) {
	replies, err := fanOut(ctx, r.c, call.lease, r.all(),
		func(ctx context.Context, i int) (reentrant.AcquireResult, error) {
			return r.nodes[i].acquire(ctx, call)
		},
		func([]nodeReply[reentrant.AcquireResult]) bool { return false },
		func(late nodeReply[reentrant.AcquireResult]) { r.undoReentry(late, call) })
	var t tally
	var count int64
	for _, rep := range replies {
		t.count(rep.node, rep.val.Acquired, rep.err)
		count = max(count, rep.val.HoldCount)
	}
	held, verdict := r.verdict(t)
	if err == nil && held {
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
		res := rep.val
		err := rep.err
		if err != nil {
			err = untilAnswered(ctx, func(ctx context.Context) (err error) {
				res, err = p.acquire(ctx, call)
				return err
			})
		}
		if err == nil && res.Acquired {
			releaseRetrying(ctx, p, call.owner, call.hold)
		}
	})
}

// leave takes the call's waiter out of every node's queue, passing on a
// grant it was handed there, and gives back the grants it kept.
func (r *quorumLock) leave(ctx context.Context, _ reentrant.Waiter, owner string, lease time.Duration, newOwner bool) error {
	r.giveUp(acquireCall{owner: owner, lease: lease, newOwner: newOwner}, nil)
	r.mu.Lock()
	waiters := r.waiters
	r.mu.Unlock()
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
// per node (the holds grouped by slot, as on one), all at once. A hold is
// renewed once a majority renewed it; lost (watchdog.ErrNotHeld) once too
// many nodes found it not held for a majority to hold it.
func (c *Client) renewQuorum(ctx context.Context, batch []*hold, lease time.Duration) []error {
	n := len(c.quorum.nodes)
	perNode := make([][]error, n)
	replies, err := fanOut(ctx, c, lease, batch[0].res.(*quorumLock).all(),
		func(ctx context.Context, i int) ([]error, error) {
			return c.quorum.nodes[i].renewHolds(ctx, batch, lease, func(h *hold) batonResource { return h.res.(*quorumLock).nodes[i] }), nil
		},
		func([]nodeReply[[]error]) bool { return false }, func(nodeReply[[]error]) {})
	for _, rep := range replies {
		perNode[rep.node] = rep.val
	}
	errs := make([]error, len(batch))
	for k, h := range batch {
		var t tally
		for i := range n {
			switch {
			case perNode[i] == nil:
				t.count(i, false, errors.Join(err, fmt.Errorf("no answer")))
			case errors.Is(perNode[i][k], watchdog.ErrNotHeld):
				t.count(i, false, nil)
			default:
				t.count(i, perNode[i][k] == nil, perNode[i][k])
			}
		}
		held, verr := h.res.(*quorumLock).verdict(t)
		switch {
		case verr != nil:
			errs[k] = verr
		case !held:
			errs[k] = fmt.Errorf("%w: renew %q", watchdog.ErrNotHeld, h.res.name())
		}
	}
	return errs
}
