package rlock

import (
	"context"
	"errors"
	"time"
)

// Do takes the named lock as Lock does (with its options), runs fn with the
// lock's Context, and unlocks. fn's ctx is the Context (FromContext finds
// the Lock in it, and a Lock call with it re-enters), which also ends when
// ctx ends, with ctx's cause, and reports the earlier deadline of the two:
// fn stops when its caller gives up or the lock is lost. The Lock's own
// Context ends only with the lock, as Lock.Context says. Do always
// unlocks: also when fn panics (it unlocks, then the panic goes on) or
// calls runtime.Goexit.
//
// It returns Lock's error if the lock was not taken, and otherwise fn's
// error. If the lock was lost while fn ran, the error also matches
// ErrLockLost; an Unlock error is joined with fn's.
func (c *Client) Do(ctx context.Context, name string, fn func(ctx context.Context) error, opts ...LockOption) error {
	l, err := c.Lock(ctx, name, opts...)
	if err != nil {
		return err
	}
	return runHeld(ctx, l, fn)
}

// held is what Do and DoAll hold while fn runs: a Lock or a LockSet.
type held interface {
	Context() context.Context
	Unlock(ctx context.Context) error
}

// runHeld runs fn with l's Context, ended also by ctx, and unlocks l, as
// Do says.
func runHeld(ctx context.Context, l held, fn func(ctx context.Context) error) error {
	fctx := newFnContext(ctx, l.Context())
	returned := false
	defer func() {
		fctx.stop()
		if !returned {
			_ = l.Unlock(ctx)
		}
	}()
	err := fn(fctx)
	returned = true
	_ = l.Context().Err() // a lease that ran out during fn is a loss, seen now
	lost := context.Cause(l.Context())
	if uerr := l.Unlock(ctx); uerr != nil {
		return errors.Join(err, uerr)
	}
	if errors.Is(lost, ErrLockLost) && !errors.Is(err, ErrLockLost) {
		return errors.Join(err, lost)
	}
	return err
}

// fnContext is the ctx Do gives fn: a handle's Context, which also ends
// when the caller's ctx ends. It derives from the handle's Context, so a
// loss ends it at once, and it carries the handle; the caller's end
// reaches it through an AfterFunc, and Err looks at both ends itself, so
// Done is closed before Err returns non-nil.
type fnContext struct {
	context.Context                         // derived from held; cancelled with the caller's cause
	held            context.Context         // the handle's (or the set's) Context
	caller          context.Context         // the ctx given to Do
	cancel          context.CancelCauseFunc // ends Context
	stopAfter       func() bool             // stops the caller's AfterFunc
}

func newFnContext(caller context.Context, held context.Context) *fnContext {
	inner, cancel := context.WithCancelCause(held)
	c := &fnContext{Context: inner, held: held, caller: caller, cancel: cancel}
	c.stopAfter = context.AfterFunc(caller, c.callerEnded)
	return c
}

func (c *fnContext) callerEnded() { c.cancel(context.Cause(c.caller)) }

// stop frees what the ctx holds, once fn has returned.
func (c *fnContext) stop() {
	c.stopAfter()
	c.cancel(context.Canceled)
}

// Deadline is the earlier of the handle's and the caller's.
func (c *fnContext) Deadline() (time.Time, bool) {
	d, ok := c.held.Deadline()
	if cd, cok := c.caller.Deadline(); cok && (!ok || cd.Before(d)) {
		return cd, true
	}
	return d, ok
}

// Err returns the end, after making sure that an end due by the clock or
// by the caller has happened.
func (c *fnContext) Err() error {
	_ = c.held.Err() // ends held, and so Context, at a lease that ran out
	if c.caller.Err() != nil {
		c.callerEnded()
	}
	return c.Context.Err()
}
