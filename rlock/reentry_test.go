package rlock

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A Lock call re-enters through the innermost handle of its own client's
// lock of that name, however many handles of other locks and other
// clients its ctx carries inside that one; with none, it is a new owner.
func TestReentryFindsItsHandlePastOtherLocks(t *testing.T) {
	ctx, srv := serve(t)
	c, other := newClient(t, srv), newClient(t, srv)
	outer, err := c.Lock(ctx, "a")
	require.NoError(t, err)
	inner, err := c.Lock(outer.Context(), "a")
	require.NoError(t, err)
	foreign, err := other.Lock(inner.Context(), "b")
	require.NoError(t, err)
	sibling, err := c.Lock(foreign.Context(), "c")
	require.NoError(t, err)
	l, ok := FromContext(sibling.Context())
	require.True(t, ok)
	require.Same(t, sibling, l, "FromContext gives the innermost handle")

	again, err := c.TryLock(sibling.Context(), "a")
	require.NoError(t, err, "did not re-enter a's hold")
	require.Same(t, (*handle)(inner), again.parent, "re-entered through a handle other than a's innermost")
	require.Equal(t, outer.Token(), again.Token())
	_, err = other.TryLock(sibling.Context(), "a")
	require.ErrorIs(t, err, ErrNotObtained, "another client re-entered c's hold")
	_, err = c.TryLock(foreign.Context(), "b")
	require.ErrorIs(t, err, ErrNotObtained, "c re-entered another client's hold")

	for _, l := range []*Lock{again, sibling, foreign, inner, outer} {
		require.NoError(t, l.Unlock(ctx))
	}
}
