package reentrant

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// An unqueued look (Waiter.Unqueued) joins no queue, yet claims a grant
// its waiter was handed while queued: the granted key names the waiter no
// more, so no later leave of that waiter gives the claimed count back (a
// look that passed no waiter would leave the key, and a quorum hold would
// lose that node to the call's leave).
func TestUnqueuedLookClaimsItsGrant(t *testing.T) {
	ctx, rdb, l := setup(t, "unqueued")
	h, err := l.AcquireNew(ctx, rdb, "H", testLease, Waiter{})
	require.NoError(t, err)
	require.True(t, h.Acquired)
	_, w := live(t, rdb, l, "w")

	res, err := l.AcquireNew(ctx, rdb, "W", testLease, unqueued(w))
	require.NoError(t, err)
	require.False(t, res.Acquired)
	require.Zero(t, rdb.LLen(ctx, l.Queue).Val(), "an unqueued look queued")

	queue(t, ctx, rdb, l, "W", w)
	_, err = l.Release(ctx, rdb, "H", h.Token, "r1")
	require.NoError(t, err)
	require.EqualValues(t, 1, rdb.Exists(ctx, l.Granted).Val(), "no grant to w")

	res, err = l.AcquireNew(ctx, rdb, "W", testLease, unqueued(w))
	require.NoError(t, err)
	require.True(t, res.Acquired && res.Reported, "%+v", res)
	require.Zero(t, rdb.Exists(ctx, l.Granted).Val(), "the grant was taken unclaimed")
}
