package reentrant

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// One owner's reads in a row share the last write's token, but not a hold
// ID: a release, a renewal and a re-entry meant for the read whose lease
// ran out act on nothing, and leave the owner's next read as it is.
func TestRWStaleReadActsOnNothingUnderItsHoldID(t *testing.T) {
	ctx, rdb, k := setupShared(t, KindRW, "stale", 0)
	read, write := rw(t, k)
	// A write first: its counter outlives the short read below, so both
	// reads share its token.
	w, err := write.AcquireNew(ctx, rdb, "W", testLease, Waiter{})
	require.NoError(t, err)
	_, err = write.Release(ctx, rdb, "W", w.HoldID(), "rw")
	require.NoError(t, err)
	old, err := read.Acquire(ctx, rdb, "O", "a1", 50*time.Millisecond, 0, Waiter{})
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond)
	next, err := read.Acquire(ctx, rdb, "O", "a2", testLease, 0, Waiter{})
	require.NoError(t, err)
	require.Equal(t, AcquireResult{Acquired: true, HoldCount: 1, Token: old.Token, hold: next.HoldID()}, next)
	require.Greater(t, next.HoldID(), old.HoldID(), "a hold of its own")

	rel, err := read.Release(ctx, rdb, "O", old.HoldID(), "r1")
	require.NoError(t, err)
	require.Equal(t, NotHeld, rel.Status)
	ok, err := read.Renew(ctx, rdb, "O", old.HoldID(), time.Minute)
	require.NoError(t, err)
	require.False(t, ok)
	again, err := read.Acquire(ctx, rdb, "O", "a3", testLease, old.HoldID(), Waiter{})
	require.NoError(t, err)
	require.True(t, again.HoldGone)
	require.Equal(t, map[string]int64{"r:O": 1}, holds(t, ctx, rdb, k))

	again, err = read.Acquire(ctx, rdb, "O", "a4", testLease, next.HoldID(), Waiter{})
	require.NoError(t, err)
	require.Equal(t, AcquireResult{Acquired: true, HoldCount: 2, Token: next.Token, hold: next.HoldID()}, again)
}

// A force-release names the holds it ended by hold ID, and a resent one
// replays the same names.
func TestSharedForceReleaseNamesTheHoldsItEnded(t *testing.T) {
	ctx, rdb, k := setupShared(t, KindRW, "forced", 0)
	read, _ := rw(t, k)
	a, err := read.AcquireNew(ctx, rdb, "A", testLease, Waiter{})
	require.NoError(t, err)
	b, err := read.AcquireNew(ctx, rdb, "B", testLease, Waiter{})
	require.NoError(t, err)
	for range 2 {
		n, ended, err := k.ForceRelease(ctx, rdb, "f1")
		require.NoError(t, err)
		require.EqualValues(t, 2, n)
		require.ElementsMatch(t, []uint64{a.HoldID(), b.HoldID()}, ended)
	}
	n, ended, err := k.ForceRelease(ctx, rdb, "f2")
	require.NoError(t, err)
	require.Zero(t, n)
	require.Empty(t, ended)
}
