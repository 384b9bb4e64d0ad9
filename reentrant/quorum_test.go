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

	ok, err := l.Raise(ctx, rdb, "B", from, to, testLease)
	require.NoError(t, err)
	require.False(t, ok, "another owner's hold")
	ok, err = l.Raise(ctx, rdb, "A", from-1, to, testLease)
	require.NoError(t, err)
	require.False(t, ok, "another hold's token")
	require.Equal(t, from, currentToken(t, rdb, l), "a refused raise changes nothing")
	_, err = l.Raise(ctx, rdb, "A", to, from, testLease)
	require.Error(t, err, "a counter is never lowered")

	for range 2 { // the second is a resend
		ok, err = l.Raise(ctx, rdb, "A", from, to, testLease)
		require.NoError(t, err)
		require.True(t, ok)
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
	ok, err = l.Raise(ctx, rdb, "A", from, to, testLease)
	require.NoError(t, err)
	require.False(t, ok, "nothing to raise once released")

	next, err := l.AcquireNew(ctx, rdb, "C", testLease, Waiter{})
	require.NoError(t, err)
	require.Greater(t, next.Token, to, "the next hold's token is above the raised one")
}
