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
	return c.obtain(ctx, name, opts, true)
}

// TryLock makes one attempt and returns ErrNotObtained at once if another
// owner holds the lock. With WaitAtMost(d) it waits up to d, as Lock does.
func (c *Client) TryLock(ctx context.Context, name string, opts ...LockOption) (*Lock, error) {
	return c.obtain(ctx, name, opts, false)
}

// attempt is one Lock or TryLock call.
type attempt struct {
	c     *Client
	ctx   context.Context // the caller's
	keys  reentrant.Keys
	owner string
	// newOwner: the owner was made for this call, not taken from ctx.
	newOwner bool
	lease    time.Duration
	cfg      lockConfig
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
	owner, fromCtx := OwnerFrom(ctx)
	if !fromCtx {
		owner = c.newOwner()
	}
	a := &attempt{c: c, ctx: ctx, keys: keys, owner: owner, newOwner: !fromCtx, lease: c.cfg.watchdogLease, cfg: lc}
	if lc.leaseSet {
		a.lease = lc.lease
	}
	if err := ctx.Err(); err != nil {
		return nil, a.notObtained(err)
	}
	// Step 1: the uncontended path is this one script call.
	l, ttl, err := a.try(ctx)
	if l != nil || err != nil {
		return l, err
	}
	if !blocking && !lc.waitIsSet {
		return nil, a.notObtained(nil)
	}
	waitCtx := ctx
	if lc.waitIsSet {
		var cancel context.CancelFunc
		waitCtx, cancel = context.WithTimeout(ctx, lc.wait)
		defer cancel()
	}
	return a.wait(waitCtx, ttl)
}

// wait is steps 2 to 5 of the wait loop. The order is what makes it safe:
// the subscription is confirmed before the retry, so a release after the
// retry cannot be missed, and a release between step 1 and the subscribe is
// caught by the retry itself.
func (a *attempt) wait(ctx context.Context, ttl time.Duration) (*Lock, error) {
	if a.c.afterFirstAttempt != nil {
		a.c.afterFirstAttempt()
	}
	sub, err := a.c.hub.Subscribe(ctx, a.keys.Channel) // step 2
	if err != nil {
		return nil, a.waitError(err)
	}
	defer sub.Close()
	for {
		l, holderTTL, err := a.try(ctx) // step 3
		if l != nil || err != nil {
			return l, err
		}
		ttl = untilExpiry(holderTTL)
		// Step 4: a release message, the holder's lease running out, or
		// the end of ctx, whichever comes first; then step 5, go again.
		if err := sub.Wait(ctx, ttl); err != nil && !errors.Is(err, notify.ErrWaitTimeout) {
			return nil, a.waitError(err)
		}
	}
}

// untilExpiry is how long to wait for a holder whose PTTL read ttl. Redis
// keeps a key through the whole millisecond in which it expires, and PTTL
// reads 0 there; a retry must not land in it, so the wait runs a millisecond
// past. A negative PTTL means the key has no expiry at all.
func untilExpiry(ttl time.Duration) time.Duration {
	if ttl < 0 {
		return unknownTTLWait
	}
	return ttl + time.Millisecond
}

// try runs one acquire. It returns the held lock, or the holder's remaining
// lease when another owner holds it.
func (a *attempt) try(ctx context.Context) (*Lock, time.Duration, error) {
	var id string
	if !a.newOwner { // a new owner's acquire replays without one
		id = newRequestID()
	}
	sentAt := time.Now()
	res, err := a.acquire(ctx, id)
	if err != nil {
		if !isServerReply(err) {
			// The acquire may have run. Giving it back happens in the
			// background, so that the caller's ctx bounds the call and
			// not the clean-up, which may wait for an unreachable Redis.
			a.c.background(func() { a.undo(id) })
		}
		if ctx.Err() != nil {
			return nil, 0, a.waitError(ctx.Err())
		}
		return nil, 0, err
	}
	if !res.Acquired {
		return nil, res.HolderTTL, nil
	}
	l := a.c.newHandle(a.ctx, a.keys, a.owner, res.Token, a.cfg, sentAt)
	if err := a.c.join(l, sentAt, !a.cfg.leaseSet); err != nil {
		// Closed between the acquire and the bookkeeping: give it back.
		l.done()
		a.releaseQuietly(res.Token)
		return nil, 0, err
	}
	return l, 0, nil
}

// undo gives back an acquire whose reply was lost: it may or may not have
// run. Replaying the same request ID tells which, and holds it either way;
// one release then restores the count from before the call. If Redis stays
// unreachable the lease frees the lock instead.
func (a *attempt) undo(requestID string) {
	ctx, cancel := context.WithTimeout(context.Background(), undoTimeout)
	defer cancel()
	res, err := a.acquire(ctx, requestID)
	if err == nil && res.Acquired {
		_, _ = a.keys.Release(ctx, a.c.rdb, a.owner, res.Token, newRequestID())
	}
}

// acquire runs the acquire script once. A new owner needs no request ID:
// any hold it has is this call's own.
func (a *attempt) acquire(ctx context.Context, requestID string) (reentrant.AcquireResult, error) {
	if a.newOwner {
		return a.keys.AcquireNew(ctx, a.c.rdb, a.owner, a.lease)
	}
	return a.keys.Acquire(ctx, a.c.rdb, a.owner, requestID, a.lease, 0)
}

func (a *attempt) releaseQuietly(token uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), undoTimeout)
	defer cancel()
	_, _ = a.keys.Release(ctx, a.c.rdb, a.owner, token, newRequestID())
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
