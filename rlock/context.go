package rlock

import (
	"context"
	"fmt"
	"time"

	"github.com/batonlock/baton/reentrant"
)

type ownerKey struct{}

// WithOwner returns a ctx whose Lock calls act as owner: calls that share an
// owner are one owner, and re-enter each other's locks at once, across
// goroutines and processes. Use it for ownership you mean to share; to
// re-enter a lock you hold, pass its Context() instead.
func WithOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey{}, owner)
}

// OwnerFrom returns the owner that WithOwner put in ctx, if any.
func OwnerFrom(ctx context.Context) (string, bool) {
	owner, ok := ctx.Value(ownerKey{}).(string)
	return owner, ok && owner != ""
}

// innermostKey finds, in a ctx, the innermost handle of any resource.
type innermostKey struct{}

// handleIn finds, in ctx, the innermost handle of c's hold on resource
// mode id: a call with ctx re-enters through it.
func (c *Client) handleIn(ctx context.Context, id resourceID) *handle {
	return innermost(ctx, func(l *handle) bool { return l.hold.c == c && l.hold.res.id() == id })
}

// innermost finds, in ctx, the innermost handle that is. It goes through
// the handles ctx carries, innermost first, each found in the values of the
// ctx its own acquire was given: a key of its own per resource would cost
// an allocation on every Lock.
func innermost(ctx context.Context, is func(*handle) bool) *handle {
	l, _ := ctx.Value(innermostKey{}).(*handle)
	for l != nil && !is(l) {
		l, _ = l.ctx.Context.Value(innermostKey{}).(*handle)
	}
	return l
}

// isPermit tells a Permit's handle from a Lock's: a handle has one type.
func (l *handle) isPermit() bool { return l.hold.res.id().mode == reentrant.ModePermits }

// isLock: a handle of a plain or an RW lock, whose type is Lock.
func (l *handle) isLock() bool { return !l.isPermit() }

// FromContext returns the Lock (of a plain or an RW lock) whose Context ctx
// is, or derives from: the innermost one when handles are nested. A Permit
// is no Lock: ctx carrying only Permits gives false (see
// PermitFromContext). Within Client.Do's function it gives the Lock, for
// its Token.
func FromContext(ctx context.Context) (*Lock, bool) {
	l := innermost(ctx, (*handle).isLock)
	return (*Lock)(l), l != nil
}

// PermitFromContext returns the Permit whose Context ctx is, or derives
// from: the innermost one when handles are nested. A Lock is no Permit.
func PermitFromContext(ctx context.Context) (*Permit, bool) {
	l := innermost(ctx, (*handle).isPermit)
	return (*Permit)(l), l != nil
}

// errLeaseExpired ends the Context of a handle taken WithLease at its own
// deadline, while the hold may live on through other handles.
var errLeaseExpired = fmt.Errorf("%w: this handle's fixed lease ran out", ErrLockLost)

// handleContext is a handle's Context. It ends only with the handle: when
// it is unlocked, when its fixed lease runs out, or when the hold is lost;
// never with the ctx given to the acquire, whose values it keeps. Err
// looks at the clock itself, so a holder that resumes after a pause sees
// the end on its first look, before any timer fires.
type handleContext struct {
	context.Context           // cancelled at each end above
	l               *handle   // whose Context this is
	deadline        time.Time // a fixed handle's own validity; zero if none
}

// Err returns the end, as context.Context requires, after making sure that
// an end due by the clock has happened: Done is closed before Err returns
// non-nil.
func (c *handleContext) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	now := time.Now()
	if h := c.l.hold; h.validity.passed(now) {
		h.cutOff(h.causeAtValidity())
		return c.Context.Err()
	}
	if !c.deadline.IsZero() && !now.Before(c.deadline) {
		c.l.cancel(errLeaseExpired)
		return c.Context.Err()
	}
	return nil
}

// Value answers for the handle itself, so calls with this Context (or one
// derived from it) re-enter through it (see handleIn).
func (c *handleContext) Value(key any) any {
	if _, ok := key.(innermostKey); ok {
		return c.l
	}
	return c.Context.Value(key)
}
