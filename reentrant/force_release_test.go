package reentrant

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestForceRelease(t *testing.T) {
	ctx, rdb, l := setup(t, "force")
	deleted, err := l.ForceRelease(ctx, rdb, "f1")
	require.NoError(t, err)
	require.Zero(t, deleted)

	r, err := l.Acquire(ctx, rdb, "A", "r1", testLease, 0, Waiter{})
	require.NoError(t, err)
	_, err = l.Acquire(ctx, rdb, "A", "r2", testLease, 0, Waiter{})
	require.NoError(t, err)
	sub, w := subscribed(t, rdb, l, "B-waiter")
	got, err := l.AcquireNew(ctx, rdb, "B", testLease, w)
	require.NoError(t, err)
	require.False(t, got.Acquired)
	deleted, err = l.ForceRelease(ctx, rdb, "f2")
	require.NoError(t, err)
	require.Equal(t, r.Token, deleted, "it names the hold it deleted")
	g := receiveGrant(t, sub)
	require.Equal(t, "B-waiter", g.Waiter, "and hands the lock on")
	require.Greater(t, g.Token, deleted)
	st, err := l.Inspect(ctx, rdb)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"B": 1}, st.Holders)

	// A resend of the same request replays its reply, token to the digit,
	// and leaves the hold it granted alone.
	again, err := l.ForceRelease(ctx, rdb, "f2")
	require.NoError(t, err)
	require.Equal(t, deleted, again)
	st, err = l.Inspect(ctx, rdb)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"B": 1}, st.Holders, "the resend deleted the hold its first run granted")
}
