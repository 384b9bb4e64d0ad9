package reentrant

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// Tokens are Lua numbers (doubles), exact up to 2^53. The last token is
// MaxToken; a counter at it or past it (set far ahead, or near 2^63, where
// tokens printed as -2^63 and the hold could not be released or raised)
// refuses a new hold with ErrTokenOverflow, and writes nothing.
func TestTokensEndAtMaxToken(t *testing.T) {
	ctx, rdb, l := setup(t, "range")
	setCounter(t, ctx, rdb, l.Fence, MaxToken-1)
	r, err := l.AcquireNew(ctx, rdb, "A", testLease, Waiter{})
	require.NoError(t, err)
	require.Equal(t, uint64(MaxToken), r.Token, "the last exact token")
	rel, err := l.Release(ctx, rdb, "A", r.Token, "r")
	require.NoError(t, err)
	require.Equal(t, Released, rel.Status)

	for _, counter := range []uint64{MaxToken, MaxToken + 1, math.MaxInt64 - 1} {
		setCounter(t, ctx, rdb, l.Fence, counter)
		_, err := l.AcquireNew(ctx, rdb, "B", testLease, Waiter{})
		require.ErrorIs(t, err, ErrTokenOverflow, "counter %d", counter)
		requireCounter(t, ctx, rdb, l, counter)
		_, err = l.Acquire(ctx, rdb, "C", fmt.Sprint("c", counter), testLease, 0, Waiter{})
		require.ErrorIs(t, err, ErrTokenOverflow, "counter %d, a given owner", counter)
		requireCounter(t, ctx, rdb, l, counter)
		require.Zero(t, rdb.Exists(ctx, l.Hash, l.RequestKey(fmt.Sprint("c", counter))).Val(), "nothing taken")
	}
}

// A hand-on past MaxToken fails the same way: the holder at MaxToken keeps
// its hold (to its lease) and the waiter stays queued; nobody is granted
// a token that is not above MaxToken.
func TestTokenPastMaxTokenIsNeverGranted(t *testing.T) {
	ctx, rdb, l := setup(t, "range-grant")
	setCounter(t, ctx, rdb, l.Fence, MaxToken-1)
	a, err := l.AcquireNew(ctx, rdb, "A", testLease, Waiter{})
	require.NoError(t, err)
	sub, w := subscribed(t, rdb, l, "w1")
	defer sub.Close()
	b, err := l.AcquireNew(ctx, rdb, "B", testLease, w)
	require.NoError(t, err)
	require.False(t, b.Acquired)
	_, err = l.Release(ctx, rdb, "A", a.Token, "r")
	require.ErrorIs(t, err, ErrTokenOverflow)
	require.Equal(t, map[string]string{"A": "1"}, rdb.HGetAll(ctx, l.Hash).Val())
	require.EqualValues(t, 1, rdb.LLen(ctx, l.Queue).Val())
	requireCounter(t, ctx, rdb, l, MaxToken)
}

// A shared resource's hold IDs end at MaxToken as tokens do.
func TestHoldIDsEndAtMaxToken(t *testing.T) {
	ctx, rdb, k := setupShared(t, KindSemaphore, "range-ids", 2)
	m, err := k.Permits(1)
	require.NoError(t, err)
	setCounter(t, ctx, rdb, k.HoldIDs, MaxToken)
	_, err = m.AcquireNew(ctx, rdb, "A", testLease, Waiter{})
	require.ErrorIs(t, err, ErrTokenOverflow)
	require.Empty(t, holds(t, ctx, rdb, k))
}

// One script that grants several waiters gives each the next token: the
// one past MaxToken is refused with the rest, and nobody is granted.
func TestTokensOfOneHandOnEndAtMaxToken(t *testing.T) {
	ctx, rdb, k := setupShared(t, KindSemaphore, "range-many", 2)
	a, err := permits(t, k, 2).AcquireNew(ctx, rdb, "A", testLease, Waiter{})
	require.NoError(t, err)
	c := newClient(t, rdb, k, "c1")
	c.enqueue(t, ctx, rdb, permits(t, k, 1), "B", c.waiter("wb"))
	c.enqueue(t, ctx, rdb, permits(t, k, 1), "C", c.waiter("wc"))
	setCounter(t, ctx, rdb, k.Fence, MaxToken-1)
	_, err = permits(t, k, 2).Release(ctx, rdb, "A", a.HoldID(), "r")
	require.ErrorIs(t, err, ErrTokenOverflow)
	require.Equal(t, map[string]int64{"p:A": 1}, holds(t, ctx, rdb, k))
	c.requireNoMessage(t, ctx, rdb)
}

// A set whose later member has no exact next token fails whole: the
// members the script took before it are given back, for a made owner and
// a given one alike.
func TestSetPastMaxTokenTakesNothing(t *testing.T) {
	ctx, rdb, _ := setup(t, "x")
	ks := setKeys(t, "range-set", 3)
	setCounter(t, ctx, rdb, ks[2].Fence, MaxToken)
	for _, newOwner := range []bool{true, false} {
		_, err := AcquireSet(ctx, rdb, ks, "o", fmt.Sprint("set", newOwner), testLease, newOwner, Waiter{})
		require.ErrorIs(t, err, ErrTokenOverflow)
		for _, k := range ks {
			require.Zero(t, rdb.Exists(ctx, k.Hash).Val(), "%s held after the failed set", k.Name)
		}
		requireCounter(t, ctx, rdb, ks[2], MaxToken)
	}
}

// Raise refuses a token past MaxToken: no script would ever read it back.
func TestRaiseRefusesATokenPastMaxToken(t *testing.T) {
	ctx, rdb, l := setup(t, "range-raise")
	r, err := l.AcquireNew(ctx, rdb, "A", testLease, Waiter{})
	require.NoError(t, err)
	_, err = l.Raise(ctx, rdb, "A", r.Token, MaxToken+1, testLease, "over")
	require.ErrorIs(t, err, ErrTokenOverflow)
	requireCounter(t, ctx, rdb, l, r.Token)
}

// setCounter sets a counter to n, with no expiry.
func setCounter(t *testing.T, ctx context.Context, rdb *redis.Client, key string, n uint64) {
	t.Helper()
	require.NoError(t, rdb.Set(ctx, key, fmt.Sprint(n), 0).Err())
}

// requireCounter checks that l's counter reads n, as it was written.
func requireCounter(t *testing.T, ctx context.Context, rdb *redis.Client, l Keys, n uint64) {
	t.Helper()
	require.Equal(t, fmt.Sprint(n), rdb.Get(ctx, l.Fence).Val())
}
