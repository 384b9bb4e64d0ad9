package rlock

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/reentrant"
)

// Lock takes the named lock, waiting as long as ctx allows (or WaitAtMost,
// if given) while another owner holds it. The wait is woken by the holder's
// release over pub/sub, or by the holder's lease running out; it never
// sleep-polls. If ctx carries an owner (WithOwner, or a held lock's
// Context()), the call re-enters that owner's hold; otherwise it gets a new
// owner of its own.
//
// Errors: ErrInvalidName, ErrInvalidOption; ErrNotObtained when WaitAtMost
// ran out, or when ctx ended (then matching ctx.Err() too); ErrClosed; or
// the Redis error. A failed call never leaves the lock taken, and a call
// that gave up has left the queue when it returns (unless Redis did not
// answer its leave within 250 ms: the leave then goes on in the
// background, and a grant that reaches it is passed on). A grant that
// arrives as ctx ends may still be returned: the hold is the caller's, and
// Unlock gives it back. Only the wait honours ctx: the handle's Context
// keeps ctx's values but ends only with the handle (see Lock.Context).
func (c *Client) Lock(ctx context.Context, name string, opts ...LockOption) (*Lock, error) {
	return c.observed(c.obtain(ctx, name, opts, true))
}

// TryLock makes one attempt and returns ErrNotObtained at once if another
// owner holds the lock. With WaitAtMost(d) it waits up to d, as Lock does.
func (c *Client) TryLock(ctx context.Context, name string, opts ...LockOption) (*Lock, error) {
	return c.observed(c.obtain(ctx, name, opts, false))
}

// obtain is Lock (blocking) and TryLock on the plain lock called name.
func (c *Client) obtain(ctx context.Context, name string, opts []LockOption, blocking bool) (*handle, error) {
	a, err := c.prepare(ctx, opts, ownerRule{}, func(lease time.Duration) (resource, error) { return c.lockResource(name, lease) })
	if err != nil {
		return nil, err
	}
	return a.run(blocking)
}

// prepare is the attempt of a call with ctx and opts on the resource mode
// res gives for the call's lease (wire mode's lock needs it), its owner
// chosen by rule, or the error that ends the call first: ErrClosed, then
// an option's, then res's, then the owner's.
func (c *Client) prepare(ctx context.Context, opts []LockOption, rule ownerRule, res func(lease time.Duration) (resource, error)) (*attempt, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	lc, err := newLockConfig(opts)
	if err != nil {
		return nil, err
	}
	lease := c.cfg.watchdogLease
	if lc.leaseSet {
		lease = lc.lease
	}
	r, err := res(lease)
	if err != nil {
		return nil, err
	}
	o, err := c.ownerOf(ctx, r, rule)
	if err != nil {
		return nil, err
	}
	return &attempt{c: c, ctx: ctx, res: r, callOwner: o, lease: lease, cfg: lc}, nil
}

// attempt is one call that acquires a resource: a lock, an RW lock's read
// or write, or a semaphore's permits, blocking or not.
type attempt struct {
	c   *Client
	ctx context.Context // the caller's
	res resource
	callOwner
	lease time.Duration
	cfg   lockConfig
	// queuedAt is when an acquire last found this call queued, which is a
	// moment known to precede any grant to it.
	queuedAt time.Time
}

// run makes the attempt: a re-entry through a.via, or an acquire that,
// if blocking or given WaitAtMost, waits for the resource (see wait).
func (a *attempt) run(blocking bool) (*handle, error) {
	ctx := a.ctx
	if err := ctx.Err(); err != nil {
		return nil, a.notObtained(err)
	}
	if a.via != nil {
		return a.reenter(ctx)
	}
	// The uncontended path is this one script call. Once the client's
	// grant channel is subscribed for good, a call that may wait is already
	// a waiter in it, and queues in the same call if the resource is held.
	var s *subscribed
	waits := blocking || a.cfg.waitIsSet
	if waits {
		var err error
		if s, err = a.subscribe(ctx, false); err != nil {
			return nil, a.waitError(err)
		}
	}
	l, ttl, err := a.try(ctx, s.waiter())
	if l != nil || err != nil {
		s.close()
		return l, err
	}
	if !waits {
		return nil, a.notObtained(nil)
	}
	a.c.acks.warm(ctx, a.res.id().key) // its grant may come by message
	waitCtx := ctx
	if a.cfg.waitIsSet {
		var cancel context.CancelFunc
		waitCtx, cancel = context.WithTimeout(ctx, a.cfg.wait)
		defer cancel()
	}
	return a.observeWait(func() (*handle, error) { return a.wait(waitCtx, s, ttl) })
}

// reenter re-enters the hold of a.via, once no other re-entry through a.via
// is held: goroutines forked from one Context take turns. The turn is
// local; the re-entry itself is one script call that acts only on a.via's
// hold, by token.
func (a *attempt) reenter(ctx context.Context) (*handle, error) {
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
	// Pending until acknowledged: an unacknowledged re-entry is undone by
	// a replay of it.
	call := a.call(id, h.id, reentrant.Waiter{})
	call.pending = true
	res, err := a.res.acquire(ctx, call)
	switch {
	case err != nil:
		h.giveTurnBack(a.via)
		return nil, a.failed(ctx, err, id, reentrant.Waiter{})
	case res.HoldGone:
		a.res.settle(id)
		h.giveTurnBack(a.via)
		h.cutOff(h.lost("re-entry found it not held"))
		return nil, a.notObtained(h.endCause())
	}
	if err := a.c.acks.replicated(ctx, a.res.id().key); err != nil {
		h.giveTurnBack(a.via)
		// Undone by a replay (not pending: it settles the request), not by
		// a release of one count: a give-back retried onto a replica
		// promoted without the re-entry would take the count of the outer
		// hold, where the replay runs the re-entry first.
		return nil, a.notReplicated(ctx, err, func(ctx context.Context) { a.undo(ctx, id) })
	}
	a.res.settle(id)
	l := newHandle(h, a.ctx, a.via, a.cfg, sent, Reentered)
	if err := h.join(l, sent, a.lease); err != nil {
		// The hold ended since the turn was taken: give the count back.
		h.giveTurnBack(a.via)
		l.cancel(err)
		a.giveBackLater(holdGrant{id: res.HoldID(), token: res.Token})
		return nil, a.notObtained(err)
	}
	return l, nil
}

// try runs one acquire, as waiter w if w has an ID: then a held resource
// queues the call, and a free one with a queue goes to its head. It
// returns the handle, or the holder's remaining lease when another owner
// holds the resource. A hold the acquire only reports (one granted to w
// meanwhile) is valid from a.queuedAt, not from this send. A grant whose
// validity has already passed when its reply arrives is no handle: it is
// given back, and try reports the resource as held for no time, so a wait
// goes on at once.
func (a *attempt) try(ctx context.Context, w reentrant.Waiter) (*handle, time.Duration, error) {
	var id string
	if !a.newOwner { // a new owner's acquire replays without one
		id = newRequestID()
	}
	sent := time.Now()
	call := a.call(id, 0, w)
	call.pending = id != "" // until acknowledged: see claim
	res, err := a.res.acquire(ctx, call)
	if err != nil {
		return nil, 0, a.failed(ctx, err, id, w)
	}
	if !res.Acquired {
		a.res.settle(id)
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
		kind = Reentered // a given owner (WithOwner's) held it already
	}
	return a.claim(ctx, holdGrant{id: res.HoldID(), token: res.Token, request: id}, sent, a.lease, kind)
}

// claim turns acquired hold g, which Redis keeps for at least lease from
// sent, into this call's handle (see adopt). A grant whose validity has
// passed before it became a handle is given back at once, and one this
// client holds a newer hold of the owner for is given back in the
// background: for both, claim reports the resource as held for no time,
// so a wait goes on at once.
//
// A grant counts only once replicas have acknowledged it (see
// WithReplicaAcks): one that is not is given back (see unacknowledged),
// and claim returns ErrNotObtained with the reason.
func (a *attempt) claim(ctx context.Context, g holdGrant, sent time.Time, lease time.Duration, kind AcquireKind) (*handle, time.Duration, error) {
	if err := a.c.acks.replicated(ctx, a.res.id().key); err != nil {
		return nil, 0, a.notReplicated(ctx, err, a.unacknowledged(g))
	}
	a.res.settle(g.request)
	l, err := a.c.adopt(a, g, sent, lease, kind)
	switch {
	case err == nil:
		return l, 0, nil
	case errors.Is(err, errDeadGrant):
		a.giveBack(ctx, g)
		return nil, 0, nil
	}
	a.giveBackLater(g)
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

// acquireAs runs the acquire script once, re-entering the hold of ID hold
// if not 0, as waiter w if w has an ID. A new owner needs no request ID:
// any hold it has is this call's own.
func (a *attempt) acquireAs(ctx context.Context, requestID string, hold uint64, w reentrant.Waiter) (reentrant.AcquireResult, error) {
	return a.res.acquire(ctx, a.call(requestID, hold, w))
}

// call is the acquire call acquireAs makes.
func (a *attempt) call(requestID string, hold uint64, w reentrant.Waiter) acquireCall {
	return acquireCall{owner: a.owner, newOwner: a.newOwner, requestID: requestID,
		lease: a.lease, hold: hold, reentry: a.via != nil, waiter: w}
}

// waitError is err, from the hub or the caller's ctx, in the caller's
// terms: ErrClosed, or ErrNotObtained when the call's ctx or WaitAtMost
// ended the wait.
func (a *attempt) waitError(err error) error {
	err = lower(err)
	switch {
	case errors.Is(err, ErrClosed):
		return ErrClosed
	case a.ctx.Err() != nil:
		return a.notObtained(a.ctx.Err())
	case errors.Is(err, context.DeadlineExceeded) && a.cfg.waitIsSet:
		return a.notObtained(nil)
	}
	return err
}

// notObtained is ErrNotObtained for this call: with ctxErr when the call's
// ctx ended it, else for WaitAtMost running out or TryLock finding the
// resource held.
func (a *attempt) notObtained(ctxErr error) error {
	name := a.res.name()
	switch {
	case ctxErr != nil:
		return fmt.Errorf("%w: %q: %w", ErrNotObtained, name, ctxErr)
	case a.cfg.waitIsSet:
		return fmt.Errorf("%w: %q still held after %v", ErrNotObtained, name, a.cfg.wait)
	}
	return fmt.Errorf("%w: %q is held", ErrNotObtained, name)
}

// notReplicated gives back, with giveBack (which tries until Redis
// answers), a grant whose acknowledgement by replicas failed with err, and
// returns the call's error: it matches ErrNotObtained, and err
// (ErrNotReplicated when too few replicas acknowledged in time), or the
// ctx's error when that ended the wait. The give-back is not bounded by
// ctx, so that a call cancelled during the wait has given the grant back
// when it returns, unless Redis does not answer within leaveWait: then it
// goes on in the background, while the call ends (and its wait leaves the
// queue). So giveBack may read the attempt but not change it (giveBack's
// new owner for the call, set from this background, raced the leave that
// read the owner). It may land on a replica promoted meanwhile, which
// never had the grant: it must be harmless there.
func (a *attempt) notReplicated(ctx context.Context, err error, giveBack func(context.Context)) error {
	a.c.cleanUpNow(a.lease, giveBack)
	if ctx.Err() != nil {
		return a.notObtained(ctx.Err())
	}
	return &lockError{sentinel: ErrNotObtained, name: a.res.name(), what: "not obtained", cause: err}
}

// unacknowledged is the give-back of grant g, which replicas did not
// acknowledge. It may land on a replica promoted meanwhile, without g,
// where g's owner may hold the resource all the same: a given owner's
// acquire may have re-entered a hold of it, whose count a release would
// take there. So an acquire with a request ID is undone by a replay of
// it, which runs it first where it never ran (and settles it); any other
// grant is a new owner's or a message's, given back by hold ID and owner
// (see back): a no-op where the grant is not.
func (a *attempt) unacknowledged(g holdGrant) func(context.Context) {
	if g.request != "" {
		return func(ctx context.Context) { a.undo(ctx, g.request) }
	}
	return a.backRetrying(g)
}

// isServerReply reports whether err is an error reply from Redis, which
// means the script was rejected as a whole rather than possibly run, or a
// refusal the script replied with, having written nothing (permits above
// a semaphore's size), or a quorum's call that gave back what it took on
// every node itself: either way there is nothing to clean up.
func isServerReply(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) || errors.As(err, new(givenBack)) || errors.Is(err, reentrant.ErrInvalidPermits) ||
		errors.Is(err, reentrant.ErrInvalidSize) || errors.Is(err, reentrant.ErrPermitsHeld)
}

// newRequestID names one script call for replay. It only has to be unique
// among one resource's requests within the request TTL; it is 16 random
// bytes as 32 lowercase hex characters, the form of Java Redisson's
// request IDs (ServiceManager.generateId), which a wire-mode unlock's
// latch carries in its key.
func newRequestID() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
	return hex.EncodeToString(b[:])
}
