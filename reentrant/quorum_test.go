package reentrant

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Raise makes a hold's token the quorum's, only while the owner holds the
// lock under the token its acquire gave it: the raised token then names
// the hold for its renewal and release, and the old one no longer does.
func TestRaise(t *testing.T) {
	ctx, rdb, l := setup(t, "raise")
	r, err := l.AcquireNew(ctx, rdb, "A", testLease, Waiter{})
	require.NoError(t, err)
	from, to := r.Token, r.Token+1000

	id, err := l.Raise(ctx, rdb, "B", from, to, testLease, "other")
	require.NoError(t, err)
	require.Zero(t, id, "another owner's hold")
	id, err = l.Raise(ctx, rdb, "A", from-1, to, testLease, "old")
	require.NoError(t, err)
	require.Zero(t, id, "another hold's token")
	require.Equal(t, from, currentToken(t, rdb, l), "a refused raise changes nothing")
	_, err = l.Raise(ctx, rdb, "A", to, from, testLease, "lower")
	require.Error(t, err, "a counter is never lowered")

	for range 2 { // the second is a resend, which replays the first
		id, err = l.Raise(ctx, rdb, "A", from, to, testLease, "raise")
		require.NoError(t, err)
		require.Equal(t, to, id)
		require.Equal(t, to, currentToken(t, rdb, l))
	}
	expiry, err := rdb.PExpireTime(ctx, l.Fence).Result()
	require.NoError(t, err)
	require.GreaterOrEqual(t, expiry, time.Duration(to/1000)*time.Millisecond+2*testLease, "the counter outlives the raised token by two leases")

	renewed, err := l.Renew(ctx, rdb, "A", from, testLease)
	require.NoError(t, err)
	require.False(t, renewed, "the old token names the hold no more")
	renewed, err = l.Renew(ctx, rdb, "A", to, testLease)
	require.NoError(t, err)
	require.True(t, renewed)
	rel, err := l.Release(ctx, rdb, "A", to, "rel")
	require.NoError(t, err)
	require.Equal(t, Released, rel.Status)
	id, err = l.Raise(ctx, rdb, "A", from, to, testLease, "after")
	require.NoError(t, err)
	require.Zero(t, id, "nothing to raise once released")

	next, err := l.AcquireNew(ctx, rdb, "C", testLease, Waiter{})
	require.NoError(t, err)
	require.Greater(t, next.Token, to, "the next hold's token is above the raised one")
}

// Raise leaves the ID of a hold another call of its owner re-entered under
// it: that call names the hold by it, to give its count back. Once that
// count is back, a copy of that raise that comes late (one request ID)
// replays its answer and moves nothing; a new raise raises the hold.
func TestRaiseLeavesAReenteredHold(t *testing.T) {
	ctx, rdb, l := setup(t, "raise-reentered")
	r, err := l.AcquireNew(ctx, rdb, "A", testLease, Waiter{})
	require.NoError(t, err)
	from, to := r.Token, r.Token+1000
	again, err := l.Acquire(ctx, rdb, "A", "again", testLease, 0, Waiter{})
	require.NoError(t, err)
	require.Equal(t, int64(2), again.HoldCount)
	require.Equal(t, from, again.Token, "the re-entry names the hold by from")

	id, err := l.Raise(ctx, rdb, "A", from, to, testLease, "first")
	require.NoError(t, err)
	require.Equal(t, from, id, "held under from, not raised")
	require.Equal(t, from, currentToken(t, rdb, l))

	rel, err := l.Release(ctx, rdb, "A", from, "rel-again")
	require.NoError(t, err)
	require.Equal(t, StillHeld, rel.Status, "the re-entry's count goes back by the name it had")
	id, err = l.Raise(ctx, rdb, "A", from, to, testLease, "first")
	require.NoError(t, err)
	require.Equal(t, from, id, "a late copy of the first raise replays it")
	require.Equal(t, from, currentToken(t, rdb, l), "a late copy moves no ID")
	id, err = l.Raise(ctx, rdb, "A", from, to, testLease, "second")
	require.NoError(t, err)
	require.Equal(t, to, id)
}
