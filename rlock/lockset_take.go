package rlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonlock/baton/reentrant"
)

// lockAll is LockAll (blocking) and TryLockAll.
func (c *Client) lockAll(ctx context.Context, names []string, opts []LockOption, blocking bool) (*LockSet, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	locks, err := c.setLocks(names)
	if err != nil {
		return nil, err
	}
	lc, err := newLockConfig(opts)
	if err != nil {
		return nil, err
	}
	t := &setTake{c: c, caller: ctx, wait: ctx, lease: c.cfg.watchdogLease, cfg: lc, blocking: blocking || lc.waitIsSet}
	if t.blocking {
		if err := c.checkOrder(ctx, locks); err != nil {
			return nil, err
		}
	}
	if lc.leaseSet {
		t.lease = lc.lease
	}
	// WaitAtMost bounds the whole set: the members' acquires wait as
	// Lock's, within the set's bound.
	t.cfg.waitIsSet = false
	if lc.waitIsSet {
		var cancel context.CancelFunc
		t.wait, cancel = context.WithTimeout(ctx, lc.wait)
		defer cancel()
	}
	t.owner = callOwner{owner: c.newOwner(), newOwner: true}
	if owner, ok := OwnerFrom(ctx); ok {
		t.owner = callOwner{owner: owner}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %q: %w", ErrNotObtained, locks[0].name(), err)
	}
	err = t.takeAll(locks)
	if err == nil {
		err = t.whole()
	}
	if err != nil {
		t.giveBack()
		return nil, t.failure(err, lc.wait)
	}
	return &LockSet{c: c, members: t.taken, ctx: newSetContext(t.taken)}, nil
}

// checkOrder is nil unless ctx holds a name of locks (canonical order) after
// one it does not hold: a set that may wait would then wait for the
// earlier name holding the later (ErrLockOrder).
func (c *Client) checkOrder(ctx context.Context, locks []*plainLock) error {
	var free string
	for _, p := range locks {
		switch held := c.handleIn(ctx, p.keys.Hash) != nil; {
		case !held && free == "":
			free = p.name()
		case held && free != "":
			return &lockError{sentinel: ErrLockOrder, name: p.name(),
				what: fmt.Sprintf("held through ctx, after %q, which is not", free)}
		}
	}
	return nil
}

// setTake is one LockAll or TryLockAll call: what it has taken so far, in
// the canonical order, and what each member's acquire needs.
type setTake struct {
	c        *Client
	caller   context.Context // the caller's ctx, whose handles are re-entered
	wait     context.Context // the caller's, within WaitAtMost
	owner    callOwner       // the owner the members not re-entered are taken under
	lease    time.Duration
	cfg      lockConfig // the members' acquires' (WaitAtMost is the set's)
	blocking bool
	taken    []*handle
	at       string // the name of the member being taken
}

// takeAll takes locks, in the canonical order: a member held through the
// caller's ctx is re-entered through its handle; a run of the others is
// taken by one script call per group (takeFree), and the member it stops
// at is acquired as Lock acquires one, waiting in its queue, before the
// next run. It stops at the first error.
func (t *setTake) takeAll(locks []*plainLock) error {
	for _, g := range t.c.groupsOf(locks) {
		for i := g.from; i < g.to; {
			if in := t.c.handleIn(t.caller, locks[i].keys.Hash); in != nil {
				if err := t.one(locks[i], callOwner{owner: in.hold.owner, via: in}); err != nil {
					return err
				}
				i++
				continue
			}
			j := i + 1
			for j < g.to && t.c.handleIn(t.caller, locks[j].keys.Hash) == nil {
				j++
			}
			n, stopped, err := t.takeFree(locks[i:j])
			if err != nil {
				return err
			}
			if i += n; stopped {
				if err := t.one(locks[i], t.owner); err != nil {
					return err
				}
				i++
			}
		}
	}
	return nil
}

// whole is nil when the client knows every member taken to be held, and
// otherwise the loss of the first it knows lost: a member lost while the
// set waited for a later one (Redis restarted without its data, the lock
// force-unlocked, the process paused past the lease) makes the set not
// obtained, all or nothing, not a set returned with its Context ended. A
// loss the client finds out later ends the Context, as a Lock's does.
func (t *setTake) whole() error {
	for _, m := range t.taken {
		if m.ctx.Err() != nil {
			return &lockError{sentinel: ErrNotObtained, name: m.hold.res.name(),
				what: "not obtained: lost while the set waited", cause: context.Cause(&m.ctx)}
		}
	}
	return nil
}

// attempt is the acquire of member p as owner o: its ctx ends with the
// set's wait, and carries the values of the members taken before it (the
// last one's Context chains them all), so that each member's Context, the
// last one's above all, carries every member before it.
func (t *setTake) attempt(p *plainLock, o callOwner) *attempt {
	var values context.Context = t.caller
	if n := len(t.taken); n > 0 {
		values = &t.taken[n-1].ctx
	}
	return &attempt{c: t.c, ctx: memberCtx{Context: t.wait, values: values}, res: p, callOwner: o, lease: t.lease, cfg: t.cfg}
}

// memberCtx is the ctx of a member's acquire: the set's wait, with the
// values of values.
type memberCtx struct {
	context.Context
	values context.Context
}

func (m memberCtx) Value(key any) any { return m.values.Value(key) }

// one acquires member p as owner o as Lock does: it re-enters through o's
// handle, or waits in p's queue (or, for TryLockAll, does not).
func (t *setTake) one(p *plainLock, o callOwner) error {
	t.at = p.name()
	l, err := t.c.observed(t.attempt(p, o).run(t.blocking))
	if err != nil {
		return err
	}
	t.taken = append(t.taken, (*handle)(l))
	return nil
}

// takeFree takes, in one script call, the free members at the start of
// locks, which one script may touch, and returns how many it took, and
// whether it stopped at a member it did not queue for (the next). Where
// one waiter serves every lock (reentrant's SharesWaiters) and its grant
// line costs no round trip, a blocking call is a waiter beforehand, as
// Lock's is, and the same script queues it at the member it stops at:
// takeFree then waits for that member too. A call whose reply is lost may
// have run: it is undone as a clean-up the call waits for (undoFree,
// cleanUpNow), so a failed call holds nothing and is queued nowhere when
// it returns, as a failed Lock.
func (t *setTake) takeFree(locks []*plainLock) (n int, stopped bool, err error) {
	t.at = locks[0].name()
	keys := make([]reentrant.Keys, len(locks))
	for i, p := range locks {
		keys[i] = p.keys
	}
	var s *subscribed
	if t.blocking && keys[0].SharesWaiters() {
		if s, err = subscribeForGrants(t.wait, t.c, locks[0], false); err != nil {
			return 0, false, t.waitError(err)
		}
	}
	var req string
	if !t.owner.newOwner {
		req = newRequestID()
	}
	sent := time.Now()
	res, err := reentrant.AcquireSet(t.wait, t.c.rdb, keys, t.owner.owner, req, t.lease, t.owner.newOwner, s.waiter())
	if err != nil {
		s.close()
		if !isServerReply(err) {
			w := s.waiter()
			t.c.cleanUpNow(t.lease, func(ctx context.Context) { t.undoFree(ctx, locks, req, w) })
		}
		return 0, false, t.waitError(err)
	}
	if err := t.adoptAll(locks, res.Tokens, sent); err != nil {
		if res.Queued {
			t.attempt(locks[len(res.Tokens)], t.owner).leaveNow(s.w)
		}
		s.close()
		return 0, false, err
	}
	if !res.Queued {
		s.close()
		return len(res.Tokens), len(res.Tokens) < len(locks), nil
	}
	// Queued at the member it stopped at: wait for it as Lock waits.
	next := locks[len(res.Tokens)]
	t.at = next.name()
	l, err := t.c.observed(t.attempt(next, t.owner).waitQueued(t.wait, s, res.HolderTTL, sent))
	if err != nil {
		return 0, false, err
	}
	t.taken = append(t.taken, (*handle)(l))
	return len(res.Tokens) + 1, false, nil
}

// adoptAll makes handles, members of the set, of the holds tokens a set
// script sent at sent took on the first of locks, once replicas have
// acknowledged them: one acknowledgement covers the script's every write.
// What it cannot make a member (not acknowledged; or a grant whose
// validity passed before it became a handle, the reply having come later
// than the lease; or the client closed) it gives back.
func (t *setTake) adoptAll(locks []*plainLock, tokens []uint64, sent time.Time) error {
	if len(tokens) == 0 {
		return nil
	}
	keys := make([]reentrant.Keys, len(tokens))
	for i := range tokens {
		keys[i] = locks[i].keys
	}
	if err := t.c.acks.replicated(t.wait, keys[0].Hash); err != nil {
		t.c.cleanUpNow(t.lease, func(ctx context.Context) { t.c.releaseSetRetrying(ctx, t.holds(keys, tokens)) })
		return &lockError{sentinel: ErrNotObtained, name: locks[0].name(), what: "not obtained", cause: err}
	}
	for k, token := range tokens {
		l, err := t.c.adopt(t.attempt(locks[k], t.owner), holdGrant{id: token, token: token}, sent, t.lease, Free)
		if err != nil {
			rest := t.holds(keys[k:], tokens[k:])
			t.c.cleanUpNow(t.lease, func(ctx context.Context) { t.c.releaseSetRetrying(ctx, rest) })
			return &lockError{sentinel: ErrNotObtained, name: locks[k].name(), what: "not obtained", cause: err}
		}
		t.taken = append(t.taken, (*handle)(l))
		t.c.observed(l, nil)
	}
	return nil
}

// waitError is err, which ended a set script's call, in the caller's
// terms: ErrNotObtained matching the ctx's error when the wait's ctx
// ended it.
func (t *setTake) waitError(err error) error {
	err = lower(err)
	if t.wait.Err() != nil && !errors.Is(err, ErrNotObtained) {
		return fmt.Errorf("%w: %q: %w", ErrNotObtained, t.at, t.wait.Err())
	}
	return err
}

// holds names the holds tokens of the set's owner on keys.
func (t *setTake) holds(keys []reentrant.Keys, tokens []uint64) []reentrant.SetHold {
	holds := make([]reentrant.SetHold, len(tokens))
	for i, token := range tokens {
		holds[i] = reentrant.SetHold{Keys: keys[i], Owner: t.owner.owner, Token: token}
	}
	return holds
}

// undoFree gives back a takeFree of locks whose reply was lost, as
// waiter w (none if it did not queue): replaying it (its request ID, or,
// for an owner made for the call, the holds it finds as its own, and its
// record, queued once) tells what it took and where it queued, and holds
// that either way; then w leaves that member's queue (passing on a grant
// it was handed meanwhile) and one release gives back what it took. Each
// is tried again until Redis answers or ctx ends; if it ends first, the
// leases free the locks instead.
func (t *setTake) undoFree(ctx context.Context, locks []*plainLock, req string, w reentrant.Waiter) {
	keys := make([]reentrant.Keys, len(locks))
	for i, p := range locks {
		keys[i] = p.keys
	}
	var res reentrant.SetResult
	err := untilAnswered(ctx, func(ctx context.Context) (err error) {
		res, err = reentrant.AcquireSet(ctx, t.c.rdb, keys, t.owner.owner, req, t.lease, t.owner.newOwner, w)
		return err
	})
	if err != nil {
		return
	}
	if res.Queued {
		t.attempt(locks[len(res.Tokens)], t.owner).leave(ctx, w)
	}
	if len(res.Tokens) > 0 {
		t.c.releaseSetRetrying(ctx, t.holds(keys, res.Tokens))
	}
}

// releaseSetRetrying gives back holds, which one script may touch,
// resending the release under one request ID (which replays it) while its
// reply is lost, until ctx ends (see releaseRetrying).
func (c *Client) releaseSetRetrying(ctx context.Context, holds []reentrant.SetHold) {
	req := newRequestID()
	_ = untilAnswered(ctx, func(ctx context.Context) error {
		_, err := reentrant.ReleaseSet(ctx, c.rdb, holds, req)
		return err
	})
}

// giveBack releases every member taken, all or nothing: one script per
// group, retried while Redis cannot be reached; the call waits for it up
// to leaveWait (see cleanUpNow).
func (t *setTake) giveBack() {
	if len(t.taken) == 0 {
		return
	}
	s := &LockSet{c: t.c, members: t.taken}
	t.c.cleanUpNow(t.lease, func(ctx context.Context) {
		_ = untilAnswered(ctx, func(ctx context.Context) error {
			_, unanswered := s.release(ctx)
			return unanswered
		})
	})
}

// failure is err, which ended the set's taking, in the caller's terms:
// WaitAtMost running out (wait) is ErrNotObtained naming the member
// waited for, as Lock's.
func (t *setTake) failure(err error, wait time.Duration) error {
	if t.caller.Err() == nil && t.wait.Err() != nil && errors.Is(err, ErrNotObtained) {
		return fmt.Errorf("%w: %q still held after %v", ErrNotObtained, t.at, wait)
	}
	return err
}
