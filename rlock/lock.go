package rlock

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/batonlock/baton/reentrant"
)

type ownerKey struct{}

// WithOwner returns a ctx whose Lock calls act as owner: calls that share an
// owner re-enter each other's locks, across goroutines and processes. Use it
// for ownership you mean to share; Lock.Context() already carries its owner
// for nested calls.
func WithOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey{}, owner)
}

// OwnerFrom returns the owner ctx carries, if any.
func OwnerFrom(ctx context.Context) (string, bool) {
	owner, ok := ctx.Value(ownerKey{}).(string)
	return owner, ok && owner != ""
}

// errLeaseExpired ends the Context of a lock taken WithLease at its deadline.
var errLeaseExpired = fmt.Errorf("%w: fixed lease expired", ErrLockLost)

// Lock is one hold of a named lock, returned by Client.Lock and TryLock. Each
// successful call returns its own Lock, to be unlocked once; nested calls by
// the same owner raise the hold count, and the lock is free again when every
// one of them has unlocked. A Lock is safe for concurrent use.
type Lock struct {
	c     *Client
	keys  reentrant.Keys
	owner string
	token uint64
	lease time.Duration // re-applied by a partial release
	hold  *hold         // guarded by c.mu once joined

	ctx    context.Context
	cancel context.CancelCauseFunc
	stop   context.CancelFunc // releases the fixed-lease deadline timer

	unlockMu  sync.Mutex
	unlockReq string // one ID for every Unlock attempt, so a retry replays
	unlocked  bool
}

func (c *Client) newHandle(parent context.Context, k reentrant.Keys, owner string, token uint64, lc lockConfig, acquiredAt time.Time) *Lock {
	l := &Lock{c: c, keys: k, owner: owner, token: token, lease: c.cfg.watchdogLease, unlockReq: newRequestID()}
	ctx, cancel := context.WithCancelCause(WithOwner(parent, owner))
	l.ctx, l.cancel, l.stop = ctx, cancel, func() {}
	if lc.leaseSet {
		l.lease = lc.lease
		l.ctx, l.stop = context.WithDeadlineCause(ctx, acquiredAt.Add(lc.lease), errLeaseExpired)
	}
	return l
}

// Name is the lock's name.
func (l *Lock) Name() string { return l.keys.Name }

// Token is the fencing token of this hold: it rises with every new holder of
// the lock and stays the same on re-entry. Pass it to the storage you protect
// and have it reject tokens lower than the highest it has seen.
func (l *Lock) Token() uint64 { return l.token }

// Owner is the owner ID the lock is held under.
func (l *Lock) Owner() string { return l.owner }

// Context is derived from the ctx given to Lock and carries the ownership, so
// Lock calls made with it re-enter this lock. It is cancelled when this hold
// ends: on Unlock, or with a cause matching ErrLockLost (see context.Cause)
// when the lock is lost or its fixed lease runs out.
func (l *Lock) Context() context.Context { return l.ctx }

// Unlock leaves this hold. It returns ErrNotHeld if the owner no longer holds
// the lock (the handle was already unlocked, or a fixed lease expired), and
// ErrLockLost if the lock was lost while held. A transport error leaves the
// handle held; calling Unlock again is safe, because the retry replays the
// first attempt instead of releasing twice.
func (l *Lock) Unlock(ctx context.Context) error {
	l.unlockMu.Lock()
	defer l.unlockMu.Unlock()
	if l.unlocked {
		return fmt.Errorf("%w: %q already unlocked", ErrNotHeld, l.keys.Name)
	}
	if cause := l.c.ended(l); cause != nil {
		// A lost hold is not released: the owner may hold the lock again
		// by now, through a new acquisition this release would undo.
		l.done()
		return cause
	}
	res, err := l.keys.Release(ctx, l.c.rdb, l.owner, l.token, l.unlockReq)
	if err != nil {
		return err
	}
	l.done()
	switch res.Status {
	case reentrant.StillHeld:
		l.c.leave(l)
		return nil
	case reentrant.Released:
		l.c.endHold(l.hold, errReleasedElsewhere)
		return nil
	}
	cause := fmt.Errorf("%w: %q", ErrNotHeld, l.keys.Name)
	l.c.endHold(l.hold, cause)
	return cause
}

func (l *Lock) done() {
	l.unlocked = true
	l.stop()
	l.cancel(context.Canceled)
}
