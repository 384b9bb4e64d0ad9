package reentrant

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
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

// RenewAll renews the holds of each group in one script call, whatever
// their kinds: a lock, an RW read and a permit of one name (one slot) in
// one call, a lock of another name in another. Only the holds no longer
// held report false: a permit whose lease ran out by the server clock, a
// lock renewed under a stale token, a read of an owner that holds none.
// No lease is shortened, and after the server lost its scripts the same
// calls go again by EVAL.
func TestRenewAllRenewsMixedHoldsOneCallPerGroup(t *testing.T) {
	ctx, rdb, rwKeys := setupShared(t, KindRW, "mixed", 0)
	semKeys := sharedKeys(t, Namespace{}, KindSemaphore, "mixed", 3)
	lock, err := Namespace{}.Keys("mixed")
	require.NoError(t, err)
	other, err := Namespace{}.Keys("other")
	require.NoError(t, err)
	read, _ := rw(t, rwKeys)
	p := permits(t, semKeys, 1)

	const long = time.Minute // longer than testLease: never shortened
	l, err := lock.AcquireNew(ctx, rdb, "L", long, Waiter{})
	require.NoError(t, err)
	r, err := read.AcquireNew(ctx, rdb, "R", testLease, Waiter{})
	require.NoError(t, err)
	a, err := p.AcquireNew(ctx, rdb, "A", long, Waiter{})
	require.NoError(t, err)
	lost, err := p.AcquireNew(ctx, rdb, "X", 50*time.Millisecond, Waiter{})
	require.NoError(t, err)
	o, err := other.AcquireNew(ctx, rdb, "O", testLease, Waiter{})
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond) // X's lease runs out, unpurged

	groups := [][]HoldRef{
		{
			{Keys: lock, Owner: "L", Token: l.Token},
			read.HoldRef("R", r.HoldID()),
			p.HoldRef("X", lost.HoldID()),
			p.HoldRef("A", a.HoldID()),
			read.HoldRef("nobody", r.HoldID()),
		},
		{{Keys: other, Owner: "O", Token: o.Token - 1}, {Keys: other, Owner: "O", Token: o.Token}},
		nil,
	}
	want := [][]bool{{true, true, false, true, false}, {false, true}, nil}
	require.NoError(t, renewScript.Load(ctx, rdb).Err())
	for _, flush := range []bool{false, true} {
		if flush {
			require.NoError(t, rdb.ScriptFlush(ctx).Err())
		}
		before := scriptCalls(t, rdb)
		renewed, errs := RenewAll(ctx, rdb, groups, testLease)
		require.Equal(t, []error{nil, nil, nil}, errs)
		require.Equal(t, want, renewed)
		calls := int64(2)
		if flush {
			calls = 4 // EVALSHA refused, then EVAL
		}
		require.Equal(t, calls, scriptCalls(t, rdb)-before, "one script call per group")
	}
	require.Greater(t, rdb.PTTL(ctx, lock.Hash).Val(), testLease, "the lock's longer lease is kept")
	st, err := semKeys.Inspect(ctx, rdb)
	require.NoError(t, err)
	require.Len(t, st.Holds, 1, "X's hold is gone: renewal never resurrects it")
	require.Equal(t, "A", st.Holds[0].Owner)
	require.Greater(t, st.Holds[0].TTL, testLease, "the permit's longer lease is kept")
	require.Greater(t, rdb.PTTL(ctx, other.Hash).Val(), testLease/2)

	renewed, errs := RenewAll(ctx, rdb, groups[:1], 0)
	require.ErrorIs(t, errs[0], ErrInvalidLease)
	require.Nil(t, renewed[0])
}

// scriptCalls is how many script calls (EVALSHA and EVAL) the server has
// run.
func scriptCalls(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	st, err := redistest.ReadCommandStats(context.Background(), rdb)
	require.NoError(t, err)
	return st["evalsha"] + st["eval"]
}
