package reentrant

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Neither a partial release nor a renewal shortens the lease: a nested hold
// with a longer lease keeps what it was promised (issue 9, failure 1).
func TestPartialReleaseAndRenewalKeepTheLongestLease(t *testing.T) {
	ctx, rdb, l := setup(t, "keep")
	r, err := l.Acquire(ctx, rdb, "A", "outer", 500*time.Millisecond, 0, Waiter{})
	require.NoError(t, err)
	_, err = l.Acquire(ctx, rdb, "A", "inner", testLease, r.Token, Waiter{})
	require.NoError(t, err)
	ok, err := l.Renew(ctx, rdb, "A", r.Token, 500*time.Millisecond)
	require.NoError(t, err)
	require.True(t, ok)
	require.Greater(t, rdb.PTTL(ctx, l.Hash).Val(), testLease/2, "renewal kept the longer lease")
	rel, err := l.Release(ctx, rdb, "A", r.Token, "leave-outer")
	require.NoError(t, err)
	require.Equal(t, StillHeld, rel.Status)
	require.Greater(t, rdb.PTTL(ctx, l.Hash).Val(), testLease/2, "partial release kept the lease")
}

func TestRenew(t *testing.T) {
	ctx, rdb, l := setup(t, "renew")
	ok, err := l.Renew(ctx, rdb, "A", currentToken(t, rdb, l), testLease)
	require.NoError(t, err)
	require.False(t, ok)
	require.Zero(t, rdb.Exists(ctx, l.Hash).Val(), "renew never creates a lock")

	_, err = l.Acquire(ctx, rdb, "A", "r1", time.Second, 0, Waiter{})
	require.NoError(t, err)
	ok, err = l.Renew(ctx, rdb, "A", currentToken(t, rdb, l), testLease)
	require.NoError(t, err)
	require.True(t, ok)
	require.Greater(t, rdb.PTTL(ctx, l.Hash).Val(), 5*time.Second)

	ok, err = l.Renew(ctx, rdb, "B", currentToken(t, rdb, l), testLease)
	require.NoError(t, err)
	require.False(t, ok, "only the holder renews")
}

func TestRenewAllBatchesAndSurvivesScriptFlush(t *testing.T) {
	ctx, rdb, _ := setup(t, "unused")
	ns := Namespace{}
	var renewals []Renewal
	for i, name := range []string{"a", "b", "c"} {
		l, err := ns.Keys(name)
		require.NoError(t, err)
		r := Renewal{Keys: l, Owner: "A", Token: 1}
		if i < 2 {
			res, err := l.Acquire(ctx, rdb, "A", "r", time.Second, 0, Waiter{})
			require.NoError(t, err)
			r.Token = res.Token
		}
		renewals = append(renewals, r)
	}
	require.NoError(t, rdb.ScriptFlush(ctx).Err())
	renewed, errs := RenewAll(ctx, rdb, renewals, testLease)
	require.Equal(t, []error{nil, nil, nil}, errs)
	require.Equal(t, []bool{true, true, false}, renewed, "the third is not held")
	require.Greater(t, rdb.PTTL(ctx, renewals[0].Keys.Hash).Val(), 5*time.Second)
}
