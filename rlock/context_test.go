package rlock

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type valueKey struct{}

// Every handle's Context ends only with its handle: the caller's ctx ending
// after the grant leaves it alive (and its Unlock ends it), while the same
// ctx still bounds the wait before the grant. It keeps the caller's values,
// and no deadline but a fixed lease's.
func TestHandleContextOutlivesTheCallersCtx(t *testing.T) {
	ctx, srv := serve(t)
	c, other := newClient(t, srv), newClient(t, srv)
	for _, m := range []familyMember{plainMember, rwMember, semMember} {
		for _, weight := range slices.Compact([]int64{1, m.size}) {
			excluding := m.size // a weight that cannot be held beside weight
			if weight == m.size {
				excluding = 1
			}
			t.Run(fmt.Sprintf("%s-%d", m.kind, weight), func(t *testing.T) {
				name := fmt.Sprintf("outlives-%s-%d", m.kind, weight)
				blocker, err := m.take(ctx, other, name, excluding)
				require.NoError(t, err)
				short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
				defer cancel()
				_, err = m.take(short, c, name, weight)
				require.ErrorIs(t, err, ErrNotObtained, "the caller's ctx no longer bounds the wait")
				require.ErrorIs(t, err, context.DeadlineExceeded)
				require.NoError(t, blocker.give(ctx))

				caller, cancel := context.WithCancel(context.WithValue(ctx, valueKey{}, "v"))
				h, err := m.take(caller, c, name, weight)
				require.NoError(t, err)
				cancel()
				require.NoError(t, h.ctx.Err(), "the caller's ctx ended the hold's Context")
				require.Equal(t, "v", h.ctx.Value(valueKey{}), "the caller's values are lost")
				_, hasDeadline := h.ctx.Deadline()
				require.False(t, hasDeadline, "the caller's deadline is the hold's")
				_, err = m.take(ctx, other, name, excluding, WaitAtMost(time.Nanosecond))
				require.ErrorIs(t, err, ErrNotObtained, "the hold was given up")
				require.NoError(t, h.give(ctx))
				require.ErrorIs(t, context.Cause(h.ctx), context.Canceled)
			})
		}
	}
}

// A re-entry's Context outlives the outer handle it re-entered through,
// when that one is unlocked first: the inner handle still holds a count,
// and calls with its Context re-enter through it.
func TestReentryContextOutlivesItsOuterHandle(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	c := newClient(t, srv)
	outer, err := c.Lock(ctx, "outlives")
	require.NoError(t, err)
	inner, err := c.Lock(outer.Context(), "outlives")
	require.NoError(t, err)
	require.NoError(t, outer.Unlock(ctx))
	require.NoError(t, inner.Context().Err(), "the outer Unlock ended the inner handle's Context")
	require.Equal(t, "1", rdb.HGet(ctx, lockKey("outlives"), inner.Owner()).Val())

	again, err := c.TryLock(inner.Context(), "outlives")
	require.NoError(t, err)
	require.Same(t, (*handle)(inner), again.parent, "did not re-enter through the inner handle")
	require.NoError(t, again.Unlock(ctx))
	require.NoError(t, inner.Context().Err())
	require.NoError(t, inner.Unlock(ctx))
	require.ErrorIs(t, context.Cause(inner.Context()), context.Canceled)
	require.Zero(t, rdb.Exists(ctx, lockKey("outlives")).Val())
}

// FromContext finds Locks only, of the plain lock and the RW lock alike,
// and PermitFromContext finds Permits only: each the innermost of its type
// in ctx, whatever else ctx carries inside it. A Permit is never seen as a
// Lock, whose Unlock would give its permits back.
func TestFromContextGivesEachHandleItsOwnType(t *testing.T) {
	ctx, srv := serve(t)
	c := newClient(t, srv)
	_, ok := FromContext(ctx)
	require.False(t, ok)
	_, ok = PermitFromContext(ctx)
	require.False(t, ok)

	l, err := c.Lock(ctx, "types")
	require.NoError(t, err)
	p, err := c.Semaphore("types", 2).Acquire(l.Context(), 1)
	require.NoError(t, err)
	got, ok := FromContext(p.Context())
	require.True(t, ok)
	require.Same(t, l, got, "FromContext gives the innermost Lock, past a Permit")
	gotP, ok := PermitFromContext(p.Context())
	require.True(t, ok)
	require.Same(t, p, gotP)
	_, ok = PermitFromContext(l.Context())
	require.False(t, ok, "a Lock seen as a Permit")

	r, err := c.RWLock("types").RLock(p.Context())
	require.NoError(t, err)
	got, ok = FromContext(r.Context())
	require.True(t, ok)
	require.Same(t, r, got, "an RW lock's read handle is a Lock")
	gotP, ok = PermitFromContext(r.Context())
	require.True(t, ok)
	require.Same(t, p, gotP, "PermitFromContext gives the innermost Permit, past a Lock")

	require.NoError(t, r.Unlock(ctx))
	require.NoError(t, p.Release(ctx))
	require.NoError(t, l.Unlock(ctx))
}

// A Permit alone in ctx is no Lock.
func TestPermitIsNoLock(t *testing.T) {
	ctx, srv := serve(t)
	p, err := newClient(t, srv).Semaphore("no-lock", 1).Acquire(ctx, 1)
	require.NoError(t, err)
	_, ok := FromContext(p.Context())
	require.False(t, ok, "a Permit seen as a Lock")
	require.NoError(t, p.Release(ctx))
}
