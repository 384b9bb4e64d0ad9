package rlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/notify"
	"github.com/batonlock/baton/reentrant"
)

const (
	// undoTimeout bounds the clean-up after an acquire whose outcome is
	// unknown.
	undoTimeout = time.Second
	// unknownTTLWait bounds a wait when Redis reports no expiry on the
	// holder's key (someone PERSISTed it): a safety net, not a poll.
	unknownTTLWait = time.Second
)

// Lock takes the named lock, waiting as long as ctx allows (or WaitAtMost,
// if given) while another owner holds it. The wait is woken by the holder's
// release over pub/sub, or by the holder's lease running out; it never
// sleep-polls. If ctx carries an owner (WithOwner, or a held lock's
// Context()), the call re-enters that owner's hold; otherwise it gets a new
// owner of its own.
//
// Errors: ErrInvalidName, ErrInvalidOption; ErrNotObtained when WaitAtMost
// ran out, or joined with ctx.Err() when ctx ended; ErrClosed; or the Redis
// error. A failed call never leaves the lock taken.
func (c *Client) Lock(ctx context.Context, name string, opts ...LockOption) (*Lock, error) {
	return c.observed(c.obtain(ctx, name, opts, true))
}

// TryLock makes one attempt and returns ErrNotObtained at once if another
// owner holds the lock. With WaitAtMost(d) it waits up to d, as Lock does.
func (c *Client) TryLock(ctx context.Context, name string, opts ...LockOption) (*Lock, error) {
	return c.observed(c.obtain(ctx, name, opts, false))
}

// attempt is one Lock or TryLock call.
type attempt struct {
	c     *Client
	ctx   context.Context // the caller's
	keys  reentrant.Keys
	owner string
	// newOwner: the owner was made for this call, not taken from ctx.
	newOwner bool
	// via is the handle this call re-enters through, when ctx carries one
	// of this lock from this client; nil otherwise.
	via   *Lock
	lease time.Duration
	cfg   lockConfig
	// queuedAt is when an acquire last found this call queued, which is a
	// moment known to precede any grant to it.
	queuedAt time.Time
}

func (c *Client) obtain(ctx context.Context, name string, opts []LockOption, blocking bool) (*Lock, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	lc, err := newLockConfig(opts)
	if err != nil {
		return nil, err
	}
	keys, err := c.lockKeys(name)
	if err != nil {
		return nil, err
	}
	a := &attempt{c: c, ctx: ctx, keys: keys, lease: c.cfg.watchdogLease, cfg: lc}
	if lc.leaseSet {
		a.lease = lc.lease
	}
	if via := c.handleIn(ctx, name); via != nil {
		a.via, a.owner = via, via.Owner()
	} else if owner, ok := OwnerFrom(ctx); ok {
		a.owner = owner
	} else {
		a.owner, a.newOwner = c.newOwner(), true
	}
	if err := ctx.Err(); err != nil {
		return nil, a.notObtained(err)
	}
	if a.via != nil {
		return a.reenter(ctx)
	}
	// The uncontended path is this one script call. Once the client's
	// grant channel is subscribed for good, a call that may wait is already
	// a waiter in it, and queues in the same call if the lock is held.
	var q *queued
	if blocking || lc.waitIsSet {
		if q, err = a.join(ctx, false); err != nil {
			return nil, a.waitError(err)
		}
	}
	l, ttl, err := a.try(ctx, q.waiter())
	if l != nil || err != nil {
		q.close()
		return l, err
	}
	if q == nil && !blocking && !lc.waitIsSet {
		return nil, a.notObtained(nil)
	}
	waitCtx := ctx
	if lc.waitIsSet {
		var cancel context.CancelFunc
		waitCtx, cancel = context.WithTimeout(ctx, lc.wait)
		defer cancel()
	}
	return a.observeWait(func() (*Lock, error) { return a.wait(waitCtx, q, ttl) })
}

// reenter re-enters the hold of a.via, once no other re-entry through a.via
// is held: goroutines forked from one Context take turns. The turn is
// local; the re-entry itself is one script call that acts only on a.via's
// hold, by token.
func (a *attempt) reenter(ctx context.Context) (*Lock, error) {
	h := a.via.hold
	if err := h.takeTurn(ctx, a.via); err != nil {
		return nil, a.notObtained(err)
	}
	if err := ctx.Err(); err != nil {
		h.giveTurnBack(a.via)
		return nil, a.notObtained(err)
	}
	id := newRequestID()
	sent := time.Now()
	res, err := a.keys.Acquire(ctx, a.c.rdb, a.owner, id, a.lease, h.token, reentrant.Waiter{})
	switch {
	case err != nil:
		h.giveTurnBack(a.via)
		return nil, a.failed(ctx, err, id, reentrant.Waiter{})
	case res.HoldGone:
		h.giveTurnBack(a.via)
		h.lose(lostError(h.key.name, "re-entry found it not held"))
		return nil, a.notObtained(h.ended())
	}
	l := newHandle(h, a.ctx, a.via, a.cfg, sent, Reentered)
	if err := h.join(l, sent, a.lease); err != nil {
		// The hold ended since the turn was taken: give the count back.
		h.giveTurnBack(a.via)
		l.cancel(err)
		a.c.background(func() { a.release(a.owner, res.Token) })
		return nil, a.notObtained(err)
	}
	return l, nil
}

// try runs one acquire, as waiter w if w has an ID: then a held lock queues
// the call, and a free one with a queue goes to its head. It returns the
// held lock, or the holder's remaining lease when another owner holds it.
// A hold the acquire only reports (one granted to w meanwhile) is valid from
// a.queuedAt, not from this send. A grant whose validity has already passed
// when its reply arrives is no lock: it is given back, and try reports the
// lock as held for no time, so a wait goes on at once.
func (a *attempt) try(ctx context.Context, w reentrant.Waiter) (*Lock, time.Duration, error) {
	var id string
	if !a.newOwner { // a new owner's acquire replays without one
		id = newRequestID()
	}
	sent := time.Now()
	res, err := a.acquireAs(ctx, id, 0, w)
	if err != nil {
		return nil, 0, a.failed(ctx, err, id, w)
	}
	if !res.Acquired {
		if w.ID != "" {
			a.queuedAt = sent
		}
		return nil, res.HolderTTL, nil
	}
	kind := Free
	switch {
	case res.Reported && !a.queuedAt.IsZero():
		sent, kind = a.queuedAt, HandedOff
	case res.HoldCount > 1:
		kind = Reentered // an owner shared with WithOwner held it already
	}
	return a.hold(ctx, res.Token, sent, a.lease, kind)
}

// hold turns a grant of token into a handle: Redis keeps the grant for at
// least lease from sent. A grant whose validity has passed before it
// became a handle is given back, at once, and reported as held for no time.
func (a *attempt) hold(ctx context.Context, token uint64, sent time.Time, lease time.Duration, kind AcquireKind) (*Lock, time.Duration, error) {
	l, err := a.c.adopt(a, token, sent, lease, kind)
	switch {
	case err == nil:
		return l, 0, nil
	case errors.Is(err, errDeadGrant):
		a.giveBack(ctx, token)
		return nil, 0, nil
	}
	owner := a.owner
	a.c.background(func() { a.release(owner, token) })
	if errors.Is(err, errStaleGrant) {
		return nil, 0, nil
	}
	return nil, 0, err
}

var (
	// errStaleGrant: an acquire's reply named a hold older than the one
	// this client already has for the owner; that hold has ended in Redis
	// since.
	errStaleGrant = errors.New("rlock: grant of an ended hold")
	// errDeadGrant: a grant's validity passed before it became a handle.
	// The caller never held it, so it is no loss.
	errDeadGrant = errors.New("rlock: grant's validity passed")
)

// failed handles an acquire that returned err: it may have run, so giving
// it back happens in the background, and the caller's ctx bounds the call,
// not the clean-up, which may wait for an unreachable Redis.
func (a *attempt) failed(ctx context.Context, err error, requestID string, w reentrant.Waiter) error {
	if !isServerReply(err) {
		a.c.background(func() {
			a.leave(w)
			a.undo(requestID)
		})
	}
	if ctx.Err() != nil {
		return a.waitError(ctx.Err())
	}
	return err
}

// undo gives back an acquire whose reply was lost: it may or may not have
// run. Replaying the same request ID tells which, and holds it either way;
// one release then restores the count from before the call. If Redis stays
// unreachable the lease frees the lock instead.
func (a *attempt) undo(requestID string) {
	ctx, cancel := context.WithTimeout(context.Background(), undoTimeout)
	defer cancel()
	var token uint64
	if a.via != nil {
		token = a.via.hold.token
	}
	res, err := a.acquireAs(ctx, requestID, token, reentrant.Waiter{})
	if err == nil && res.Acquired {
		_, _ = a.keys.Release(ctx, a.c.rdb, a.owner, res.Token, newRequestID())
	}
}

// release gives back one count of owner's hold of token, bounded in time.
func (a *attempt) release(owner string, token uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), undoTimeout)
	defer cancel()
	_, _ = a.keys.Release(ctx, a.c.rdb, owner, token, newRequestID())
}

// acquireAs runs the acquire script once, re-entering the hold of token if
// not 0, as waiter w if w has an ID. A new owner needs no request ID: any
// hold it has is this call's own.
func (a *attempt) acquireAs(ctx context.Context, requestID string, token uint64, w reentrant.Waiter) (reentrant.AcquireResult, error) {
	if a.newOwner {
		return a.keys.AcquireNew(ctx, a.c.rdb, a.owner, a.lease, w)
	}
	return a.keys.Acquire(ctx, a.c.rdb, a.owner, requestID, a.lease, token, w)
}

// waitError maps an error from the hub to the caller's terms.
func (a *attempt) waitError(err error) error {
	switch {
	case errors.Is(err, notify.ErrClosed):
		return ErrClosed
	case a.ctx.Err() != nil:
		return a.notObtained(a.ctx.Err())
	case errors.Is(err, context.DeadlineExceeded) && a.cfg.waitIsSet:
		return a.notObtained(nil)
	}
	return err
}

func (a *attempt) notObtained(ctxErr error) error {
	switch {
	case ctxErr != nil:
		return fmt.Errorf("%w: %q: %w", ErrNotObtained, a.keys.Name, ctxErr)
	case a.cfg.waitIsSet:
		return fmt.Errorf("%w: %q still held after %v", ErrNotObtained, a.keys.Name, a.cfg.wait)
	}
	return fmt.Errorf("%w: %q is held", ErrNotObtained, a.keys.Name)
}

// isServerReply reports whether err is an error reply from Redis, which
// means the script was rejected as a whole rather than possibly run.
func isServerReply(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr)
}

// newRequestID names one script call for replay. It only has to be unique
// among one lock's requests within the request TTL.
func newRequestID() string { return strconv.FormatUint(rand.Uint64(), 36) }
