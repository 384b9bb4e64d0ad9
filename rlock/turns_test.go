package rlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A re-entry waiting for its turn hears at once of what settles it, with
// a ctx that never ends: the end of the hold (not obtained, with the end's
// cause), and the Unlock of the handle it re-enters through while a
// nested handle holds that handle's turn (not obtained, not held).
func TestTurnWaitersHearOfTheEndAtOnce(t *testing.T) {
	ctx, srv := serve(t)
	c := newClient(t, srv)
	// waitTurn re-enters through via in the background, once a nested
	// handle holds via's turn, and returns when the call waits for it.
	waitTurn := func(via *Lock) <-chan error {
		done := make(chan error, 1)
		go func() {
			_, err := c.Lock(context.WithoutCancel(via.Context()), "turns")
			done <- err
		}()
		require.Eventually(t, func() bool { return turnAwaited(via.hold) }, 5*time.Second, time.Millisecond)
		return done
	}
	settled := func(done <-chan error) error {
		select {
		case err := <-done:
			return err
		case <-time.After(5 * time.Second):
			t.Fatal("a re-entry waiting for its turn never heard")
			return nil
		}
	}

	l, err := c.Lock(ctx, "turns")
	require.NoError(t, err)
	nested, err := c.Lock(l.Context(), "turns")
	require.NoError(t, err)
	done := waitTurn(l)
	_, err = c.ForceUnlock(ctx, "turns")
	require.NoError(t, err)
	err = settled(done)
	require.ErrorIs(t, err, ErrNotObtained)
	require.ErrorIs(t, err, ErrLockLost, "a waiter for the turn of a lost hold")
	require.ErrorIs(t, nested.Unlock(ctx), ErrLockLost)
	require.ErrorIs(t, l.Unlock(ctx), ErrLockLost)

	l, err = c.Lock(ctx, "turns")
	require.NoError(t, err)
	nested, err = c.Lock(l.Context(), "turns")
	require.NoError(t, err)
	done = waitTurn(l)
	require.NoError(t, l.Unlock(ctx))
	err = settled(done)
	require.ErrorIs(t, err, ErrNotObtained)
	require.ErrorIs(t, err, ErrNotHeld, "a waiter for the turn of an unlocked handle")
	require.EqualValues(t, 1, admin(t, srv).Exists(ctx, lockKey("turns")).Val(), "the nested handle holds the lock on")
	require.NoError(t, nested.Unlock(ctx))
}

// turnAwaited reports whether a re-entry waits for a turn of h.
func turnAwaited(h *hold) bool {
	h.turns.mu.Lock()
	defer h.turns.mu.Unlock()
	return h.turns.over != nil
}
