package rlock

import (
	"context"
	"errors"
)

// Do takes the named lock as Lock does (with its options), runs fn with the
// lock's Context, and unlocks. The Context ends when ctx ends or the lock is
// lost, so fn can stop on its own. Do always unlocks: also when fn panics
// (it unlocks, then the panic goes on) or calls runtime.Goexit.
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

// runHeld runs fn with l's Context and unlocks l, as Do says.
func runHeld(ctx context.Context, l *Lock, fn func(ctx context.Context) error) error {
	returned := false
	defer func() {
		if !returned {
			_ = l.Unlock(ctx)
		}
	}()
	err := fn(l.Context())
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
