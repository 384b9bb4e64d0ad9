package rlock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/batonlock/baton/reentrant"
)

// unlockTimeout bounds an Unlock whose own ctx had already ended: the
// release is sent all the same, so a deferred Unlock of a cancelled
// request does not leak the lock.
const unlockTimeout = 5 * time.Second

// unlockContext is the ctx an Unlock (a Lock's or a LockSet's) sends its
// releases with: ctx, or, if it has already ended, its values within
// unlockTimeout.
func unlockContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx.Err() != nil {
		return context.WithTimeout(context.WithoutCancel(ctx), unlockTimeout)
	}
	return ctx, func() {}
}

// handle is what one successful acquire returns, whatever the resource:
// its Context, its part in the hold and its unlock. It is a thin view of
// its hold, which owns the lease, the renewal and the end. A Lock is a
// handle under the lock's names for its methods.
type handle struct {
	hold   *hold
	parent *handle // the handle whose Context this one re-entered through
	fixed  bool    // taken WithLease: never renewed
	kind   AcquireKind
	ctx    handleContext // its Context, part of the handle: one allocation fewer
	cancel func(cause error)

	unlockMu  sync.Mutex // guards the unlock: one attempt at a time
	unlockReq string     // one request ID for every attempt, so a retry replays

	member    membership // its place in hold.handles, which owns it
	turnTaken bool       // a re-entry through its Context is held or being taken; owned by hold.turns
}

// newHandle makes the handle of an acquire sent at sent, whose Context
// keeps the values of caller, the acquire's ctx, but not its cancellation:
// the Context ends only with the handle (see Lock.Context), and caller's
// end can only have ended the wait. Its values keep the handles caller
// carries, so re-entry through them goes on (handleIn).
func newHandle(h *hold, caller context.Context, via *handle, lc lockConfig, sent time.Time, kind AcquireKind) *handle {
	l := &handle{hold: h, parent: via, fixed: lc.leaseSet, kind: kind, unlockReq: newRequestID()}
	inner, cancel := context.WithCancelCause(context.WithoutCancel(caller))
	l.ctx = handleContext{Context: inner, l: l}
	l.cancel = cancel
	if lc.leaseSet {
		l.ctx.deadline = validUntil(sent, lc.lease)
		deadlined, stop := context.WithDeadlineCause(inner, l.ctx.deadline, errLeaseExpired)
		l.ctx.Context = deadlined
		l.cancel = func(cause error) {
			cancel(cause)
			stop()
		}
	}
	return l
}

// unlock leaves the hold: see Lock.Unlock, whose contract it keeps.
func (l *handle) unlock(ctx context.Context) error {
	l.unlockMu.Lock()
	defer l.unlockMu.Unlock()
	send, endedBeforeSend, err := l.beginRelease()
	if !send {
		return err
	}
	ctx, cancel := unlockContext(ctx)
	defer cancel()
	h := l.hold
	res, err := h.res.release(ctx, h.owner, h.id, l.unlockReq)
	return l.finishRelease(res, err, endedBeforeSend)
}

// beginRelease begins the unlock of l, whose unlockMu is held: send says
// a release is to be sent, endedBeforeSend that the hold had ended before
// it; without send, err is the unlock's answer. A LockSet's Unlock sends
// the releases of its members together, between their beginRelease and
// finishRelease.
func (l *handle) beginRelease() (send, endedBeforeSend bool, err error) {
	h := l.hold
	if h.validity.passed(time.Now()) {
		// A lease that ran out while held is a loss, even if Redis has
		// not yet noticed.
		h.cutOff(h.causeAtValidity())
	}
	if err := h.beginUnlock(l); err != nil {
		return false, false, err
	}
	if errors.Is(h.endCause(), ErrClosed) {
		h.finishHandle(l)
		return false, false, ErrClosed
	}
	endedBeforeSend = h.endCause() != nil
	if endedBeforeSend && releasesBlind(h.res) {
		return false, true, h.finishHandle(l)
	}
	return true, endedBeforeSend, nil
}

// finishRelease ends the unlock of l, whose release (begun by
// beginRelease) answered res or failed with err, and returns the unlock's
// answer.
func (l *handle) finishRelease(res reentrant.ReleaseResult, err error, endedBeforeSend bool) error {
	h := l.hold
	if err != nil {
		if h.endCause() == nil {
			return err // still unlocking: a retry replays this release
		}
		// The hold has ended, so a retry could tell nothing more. Lost or
		// closed: the end is the answer. Given up (its lease ran out after
		// every handle had begun to unlock): the lock was held to the end
		// and the lease frees it, whatever became of this release. That
		// is the outcome of a confirmed release, so finishHandle answers
		// nil, as for one; an error would only invite a retry, which
		// could answer nothing but ErrNotHeld.
		if cause := h.finishHandle(l); cause != nil {
			return errors.Join(cause, err)
		}
		return nil
	}
	if res.Status == reentrant.NotHeld {
		h.cutOff(h.lost("Unlock found it not held"))
		return h.finishHandle(l)
	}
	if o := h.c.cfg.observer.Released; o != nil {
		o(ReleaseInfo{Name: h.res.name(), Token: h.token, Remaining: res.Remaining})
	}
	// Redis confirmed the release: the hold was held until it, whatever
	// ended it locally while the reply was on its way (a ForceUnlock in
	// this client cuts off every hold of the lock it finds, this one too).
	// A loss that came before the release was sent was answered above.
	cause := h.finishHandle(l)
	if endedBeforeSend {
		return cause
	}
	return nil
}

// errUnlocked is ErrNotHeld for a handle unlocked before.
func errUnlocked(name string) error {
	return &lockError{sentinel: ErrNotHeld, name: name, what: "already unlocked by this handle"}
}

// Lock is a handle of a hold on a named lock or on an RW lock's read or
// write, returned by Client.Lock and TryLock and by RWLock's RLock, Lock,
// TryRLock and TryLock. Each successful call returns its own Lock, to be
// unlocked once; nested calls by the same owner raise the hold count, and
// the lock is free again when every one of them has unlocked. A Lock is
// safe for concurrent use. It is a thin handle: the hold it belongs to owns the lease, the
// renewal and the end.
type Lock handle

// Name is the lock's name.
func (l *Lock) Name() string { return l.hold.res.name() }

// Token is the fencing token of this hold: it rises with every new holder of
// the lock and stays the same on re-entry. Pass it to the storage you protect
// and have it reject tokens lower than the highest it has seen. No token is
// below one handed out before it on the same name, across restarts of Redis
// without data and the expiry of its counter too: tokens follow the server
// clock, in µs (package reentrant's doc, Footprint, states the one
// assumption about clock steps). A lock's hold, a write and permits have
// each a token above every earlier one; reads side by side share one.
//
// With WithRedissonWire it is always 0: Redisson's RLock has no fencing
// token, so wire mode gives none, and a storage that fences must not
// accept 0 as a token (every token of baton's own format is at least 1).
func (l *Lock) Token() uint64 { return l.hold.token }

// Owner is the owner ID the lock is held under.
func (l *Lock) Owner() string { return l.hold.owner }

// Context carries this handle and the values of the ctx given to Lock:
// Lock calls for the same lock with it, or with a ctx derived from it,
// re-enter through this handle. It ends only with this handle, with
// context.Cause saying why, at the first of these:
//   - this handle is unlocked (context.Canceled);
//   - the lock is lost (a cause matching ErrLockLost): its lease, less the
//     drift margin, has run out since the send of the last confirmed acquire
//     or renewal, Redis said it no longer holds it, or ForceUnlock deleted
//     it;
//   - for a lock taken WithLease, this handle's lease runs out (a cause
//     matching ErrLockLost); then Deadline reports that moment (and
//     otherwise no deadline).
//
// The end of the ctx given to Lock does not end it: that ctx bounds the
// wait only. Nor does the Unlock of the handle it re-entered through, or
// of the write it was taken under (a downgrade). Its Err checks the clock
// itself, so after a pause the first call already reports a lease that ran
// out. The hold lasts until its last handle unlocks or it is lost.
func (l *Lock) Context() context.Context { return &l.ctx }

// Unlock gives back this handle's count of its hold. The release is sent even when ctx has already
// ended (bounded then by a timeout of its own), and the hold is no longer
// renewed from the moment Unlock is called on its last handle, whatever
// the release's fate: at worst the lease frees the lock.
//
// It returns nil once the release is confirmed; ErrLockLost if the lock was
// taken away while this handle held it (the release is sent all the same,
// so a lock Redis still holds is freed); ErrNotHeld if this handle was
// already unlocked; ErrClosed after Client.Close (which released it). A
// transport error leaves the handle unlocking: calling Unlock again is
// safe, because the retry replays the first attempt instead of releasing
// twice. But once the lease has run out on a hold whose every handle had
// called Unlock, a failed release returns nil and finishes the handle: the
// lock was held to the end, and the lease frees it, as a confirmed release
// would have.
func (l *Lock) Unlock(ctx context.Context) error { return (*handle)(l).unlock(ctx) }
