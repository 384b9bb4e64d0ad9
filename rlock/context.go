package rlock

import (
	"context"
	"fmt"
	"time"
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
// face id: a call with ctx re-enters through it. It goes through the
// handles ctx carries, innermost first, each found in the ctx its own
// acquire was given: a key of its own per resource would cost an
// allocation on every Lock.
func (c *Client) handleIn(ctx context.Context, id resourceID) *handle {
	l, _ := ctx.Value(innermostKey{}).(*handle)
	for l != nil && (l.hold.c != c || l.hold.res.id() != id) {
		l, _ = l.ctx.Context.Value(innermostKey{}).(*handle)
	}
	return l
}

// FromContext returns the handle whose Context ctx is, or derives from: the
// innermost one when locks are nested. Within Client.Do's function it gives
// the Lock, for its Token.
func FromContext(ctx context.Context) (*Lock, bool) {
	l, ok := ctx.Value(innermostKey{}).(*handle)
	return (*Lock)(l), ok
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
