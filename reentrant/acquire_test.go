package reentrant

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestAcquireReenterRelease(t *testing.T) {
	ctx, rdb, l := setup(t, "orders")

	r, err := l.Acquire(ctx, rdb, "A", "r1", testLease, 0, Waiter{})
	require.NoError(t, err)
	require.True(t, r.Acquired)
	require.EqualValues(t, 1, r.HoldCount)
	first := r.Token

	r, err = l.Acquire(ctx, rdb, "A", "r2", testLease, 0, Waiter{})
	require.NoError(t, err)
	require.Equal(t, AcquireResult{Acquired: true, HoldCount: 2, Token: first}, r, "re-entry keeps the token")

	other, err := l.Acquire(ctx, rdb, "B", "r3", testLease, 0, Waiter{})
	require.NoError(t, err)
	require.False(t, other.Acquired)
	require.InDelta(t, testLease, other.HolderTTL, float64(time.Second), "B gets the holder's PTTL")

	st, err := l.Inspect(ctx, rdb)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"A": 2}, st.Holders)
	require.Equal(t, first, st.LastToken)

	rel, err := l.Release(ctx, rdb, "B", currentToken(t, rdb, l), "r4")
	require.NoError(t, err)
	require.Equal(t, NotHeld, rel.Status, "a non-owner cannot release")

	rel, err = l.Release(ctx, rdb, "A", currentToken(t, rdb, l), "r5")
	require.NoError(t, err)
	require.Equal(t, ReleaseResult{Status: StillHeld, Remaining: 1}, rel)

	before := publishes(t, rdb)
	rel, err = l.Release(ctx, rdb, "A", currentToken(t, rdb, l), "r6")
	require.NoError(t, err)
	require.Equal(t, Released, rel.Status)
	require.Zero(t, rdb.Exists(ctx, l.Hash).Val())
	require.Equal(t, before, publishes(t, rdb), "no PUBLISH when nobody waits")

	r, err = l.Acquire(ctx, rdb, "B", "r7", testLease, 0, Waiter{})
	require.NoError(t, err)
	require.True(t, r.Acquired)
	require.Greater(t, r.Token, first, "a new holder gets a higher token")
}

// go-redis resends a command after a timeout, so one logical request can run
// twice; the second run must replay, not count again.
func TestRequestIDReplays(t *testing.T) {
	ctx, rdb, l := setup(t, "replay")

	var first uint64
	for i := 0; i < 2; i++ {
		r, err := l.Acquire(ctx, rdb, "A", "same", testLease, 0, Waiter{})
		require.NoError(t, err)
		if i == 0 {
			first = r.Token
		}
		require.Equal(t, AcquireResult{Acquired: true, HoldCount: 1, Token: first, Reported: i > 0}, r, "run %d", i)
	}
	st, err := l.Inspect(ctx, rdb)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"A": 1}, st.Holders, "hold count still 1")

	_, err = l.Acquire(ctx, rdb, "A", "second", testLease, 0, Waiter{})
	require.NoError(t, err)
	for i := 0; i < 2; i++ {
		rel, err := l.Release(ctx, rdb, "A", currentToken(t, rdb, l), "rel")
		require.NoError(t, err)
		require.Equal(t, ReleaseResult{Status: StillHeld, Remaining: 1}, rel, "run %d", i)
	}
	st, err = l.Inspect(ctx, rdb)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"A": 1}, st.Holders, "one release counted once")

	// A remembered acquire is not replayed once the owner has lost the lock.
	_, err = l.ForceRelease(ctx, rdb, "force-acquire-1")
	require.NoError(t, err)
	r, err := l.Acquire(ctx, rdb, "A", "same", testLease, 0, Waiter{})
	require.NoError(t, err)
	require.True(t, r.Acquired)
	require.EqualValues(t, 1, r.HoldCount)
	require.Greater(t, r.Token, first, "fresh acquisition, fresh token")
}

// A token tells one owner's holds apart: a release, renewal or re-entry
// meant for a hold that has ended changes nothing in the owner's next hold.
func TestStaleTokenChangesNothing(t *testing.T) {
	ctx, rdb, l := setup(t, "stale")
	r, err := l.Acquire(ctx, rdb, "A", "r1", testLease, 0, Waiter{})
	require.NoError(t, err)
	old := r.Token
	_, err = l.ForceRelease(ctx, rdb, "force-acquire-2")
	require.NoError(t, err)
	r, err = l.Acquire(ctx, rdb, "A", "r2", testLease, 0, Waiter{})
	require.NoError(t, err)
	require.Greater(t, r.Token, old)

	rel, err := l.Release(ctx, rdb, "A", old, "r3")
	require.NoError(t, err)
	require.Equal(t, NotHeld, rel.Status)
	ok, err := l.Renew(ctx, rdb, "A", old, testLease)
	require.NoError(t, err)
	require.False(t, ok)
	again, err := l.Acquire(ctx, rdb, "A", "r4", testLease, old, Waiter{})
	require.NoError(t, err)
	require.Equal(t, AcquireResult{HoldGone: true}, again)
	st, err := l.Inspect(ctx, rdb)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"A": 1}, st.Holders, "the new hold is untouched")

	again, err = l.Acquire(ctx, rdb, "A", "r5", testLease, r.Token, Waiter{})
	require.NoError(t, err)
	require.Equal(t, AcquireResult{Acquired: true, HoldCount: 2, Token: r.Token}, again)
	_, err = l.ForceRelease(ctx, rdb, "force-acquire-3")
	require.NoError(t, err)
	again, err = l.Acquire(ctx, rdb, "A", "r6", testLease, r.Token, Waiter{})
	require.NoError(t, err)
	require.True(t, again.HoldGone, "a re-entry never takes a free lock")
	require.Zero(t, rdb.Exists(ctx, l.Hash).Val())
}

// A fractional-millisecond lease goes to Redis rounded up, never down, so
// Redis never expires the lock before the caller's lease ends.
func TestFractionalLeaseRoundsUp(t *testing.T) {
	ctx, rdb, l := setup(t, "fraction")
	for lease, ms := range map[time.Duration]int64{
		time.Nanosecond: 1, time.Millisecond: 1, 40 * time.Millisecond: 40,
		40*time.Millisecond + 950*time.Microsecond: 41, 40*time.Millisecond + time.Nanosecond: 41,
	} {
		got, err := leaseMillis(lease)
		require.NoError(t, err)
		require.Equal(t, ms, got, "%v", lease)
	}
	// The table above checks the rounding; this checks that the script
	// applies the rounded lease. The deadline is read against the server's
	// clock before the call, not as a PTTL after it: a loaded machine can
	// take a millisecond between the two calls, which failed a PTTL >= 40.
	// The script's clock is in whole milliseconds, at or after before, so a
	// 41 ms lease always ends more than 40 ms after before; a lease rounded
	// down to 40 fails this whenever the call ran within before's
	// millisecond.
	before, err := rdb.Time(ctx).Result()
	require.NoError(t, err)
	_, err = l.AcquireNew(ctx, rdb, "A", 40*time.Millisecond+950*time.Microsecond, Waiter{})
	require.NoError(t, err)
	deadline, err := rdb.PExpireTime(ctx, l.Hash).Result()
	require.NoError(t, err)
	after := time.UnixMilli(0).Add(deadline).Sub(before)
	require.Greater(t, after, 40*time.Millisecond, "the lease rounds up to 41 ms")
}

func TestReentryNeverShortensLease(t *testing.T) {
	ctx, rdb, l := setup(t, "lease")
	_, err := l.Acquire(ctx, rdb, "A", "r1", testLease, 0, Waiter{})
	require.NoError(t, err)
	_, err = l.Acquire(ctx, rdb, "A", "r2", 50*time.Millisecond, 0, Waiter{})
	require.NoError(t, err)
	require.Greater(t, rdb.PTTL(ctx, l.Hash).Val(), testLease/2)
}

func TestInvalidLease(t *testing.T) {
	_, rdb, l := setup(t, "bad")
	_, err := l.Acquire(context.Background(), rdb, "A", "r", 0, 0, Waiter{})
	require.ErrorIs(t, err, ErrInvalidLease)
	_, err = l.Renew(context.Background(), rdb, "A", 1, -time.Microsecond)
	require.ErrorIs(t, err, ErrInvalidLease)
}

// An owner made for one call needs no request key: a resent acquire finds
// the owner already holding and reports that hold without counting it.
func TestAcquireNewIsIdempotentWithoutRequestKey(t *testing.T) {
	ctx, rdb, l := setup(t, "new-owner")
	var first uint64
	for i := 0; i < 2; i++ {
		r, err := l.AcquireNew(ctx, rdb, "fresh", testLease, Waiter{})
		require.NoError(t, err)
		if i == 0 {
			first = r.Token
		}
		require.Equal(t, AcquireResult{Acquired: true, HoldCount: 1, Token: first, Reported: i > 0}, r, "run %d", i)
	}
	keys, err := rdb.Keys(ctx, "baton:{new-owner}:req:*").Result()
	require.NoError(t, err)
	require.Empty(t, keys, "no request key on the new-owner path")

	r, err := l.AcquireNew(ctx, rdb, "other", testLease, Waiter{})
	require.NoError(t, err)
	require.False(t, r.Acquired)
	require.Positive(t, r.HolderTTL)

	r, err = l.Acquire(ctx, rdb, "fresh", "nested", testLease, 0, Waiter{}) // re-entry through the handle's owner
	require.NoError(t, err)
	require.Equal(t, AcquireResult{Acquired: true, HoldCount: 2, Token: first}, r)
}
