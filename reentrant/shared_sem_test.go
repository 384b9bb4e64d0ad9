package reentrant

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The size lives in Redis: the first call that finds none stores its
// handle's size, and a handle made with another size keeps to the stored
// one. Permits below 1, or above the stored size, are refused before
// anything is written.
func TestSemaphoreSizeIsStoredByTheFirstCall(t *testing.T) {
	ctx, rdb, k := setupShared(t, KindSemaphore, "gpu", 4)
	_, err := k.Permits(0)
	require.ErrorIs(t, err, ErrInvalidPermits)
	_, err = k.WithSize(0)
	require.ErrorIs(t, err, ErrInvalidSize)
	_, err = k.Read()
	require.ErrorIs(t, err, ErrInvalidKind)

	_, err = permits(t, k, 5).AcquireNew(ctx, rdb, "A", testLease, Waiter{})
	require.ErrorIs(t, err, ErrInvalidPermits, "5 of 4")
	keys, err := rdb.Keys(ctx, "*").Result()
	require.NoError(t, err)
	require.Empty(t, keys, "nothing written")

	a, err := permits(t, k, 3).AcquireNew(ctx, rdb, "A", testLease, Waiter{})
	require.NoError(t, err)
	require.True(t, a.Acquired)
	require.Equal(t, "4", rdb.Get(ctx, k.Size).Val())

	other := sharedKeys(t, Namespace{}, KindSemaphore, "gpu", 10)
	require.Equal(t, []int64{4, 10}, []int64{k.SizeGiven(), other.SizeGiven()}, "each keeps its handle's size")
	b, err := permits(t, other, 2).AcquireNew(ctx, rdb, "B", testLease, Waiter{})
	require.NoError(t, err)
	require.False(t, b.Acquired, "3 + 2 > 4: the stored size holds")
	_, err = permits(t, other, 5).AcquireNew(ctx, rdb, "B", testLease, Waiter{})
	require.ErrorIs(t, err, ErrInvalidPermits, "5 of the stored 4")
	require.Equal(t, "4", rdb.Get(ctx, k.Size).Val())

	rel, err := permits(t, k, 3).Release(ctx, rdb, "A", a.HoldID(), "rel-a")
	require.NoError(t, err)
	require.Equal(t, Released, rel.Status)
	requireOnlyExpiringKeys(t, ctx, rdb, k)
}

// Strict FIFO with head-of-line blocking: a head asking 3 is not overtaken
// by a later request for 1 though 1 is free, and a try takes nothing while
// anyone is queued; each release admits what fits of the head.
func TestSemaphoreHeadOfLineBlocks(t *testing.T) {
	ctx, rdb, k := setupShared(t, KindSemaphore, "pool", 4)
	a, err := permits(t, k, 2).AcquireNew(ctx, rdb, "A", testLease, Waiter{})
	require.NoError(t, err)
	c := newClient(t, rdb, k, "c")
	c.enqueue(t, ctx, rdb, permits(t, k, 3), "B", c.waiter("b"))
	c.enqueue(t, ctx, rdb, permits(t, k, 1), "C", c.waiter("c"))
	for _, n := range []int64{1, 2} {
		try, err := permits(t, k, n).AcquireNew(ctx, rdb, "T", testLease, Waiter{})
		require.NoError(t, err)
		require.False(t, try.Acquired, "%d of the 2 free, past the queue", n)
	}
	require.Equal(t, []string{"b", "c"}, queued(t, ctx, rdb, k))
	c.requireNoMessage(t, ctx, rdb)

	_, err = permits(t, k, 2).Release(ctx, rdb, "A", a.HoldID(), "rel-a")
	require.NoError(t, err)
	gs := c.grants(t)
	require.Len(t, gs, 2, "3 + 1 fit in 4: both, in one message")
	require.Equal(t, []string{"b", "c"}, []string{gs[0].Waiter, gs[1].Waiter})
	require.Equal(t, []int64{3, 1}, []int64{gs[0].Weight, gs[1].Weight}, "each grant says its permits")
	require.Greater(t, gs[0].Token, a.Token)
	require.Greater(t, gs[1].Token, gs[0].Token, "every grant has its own, higher token")
	st, err := k.Inspect(ctx, rdb)
	require.NoError(t, err)
	require.EqualValues(t, 4, st.Used)
}

// A release is owned: only the holder, under its token, and only once;
// permits held never exceed the size, and a release never makes more free
// than the size.
func TestSemaphoreReleaseIsOwned(t *testing.T) {
	ctx, rdb, k := setupShared(t, KindSemaphore, "owned", 2)
	p := permits(t, k, 2)
	a, err := p.AcquireNew(ctx, rdb, "A", testLease, Waiter{})
	require.NoError(t, err)
	for _, bad := range []struct {
		owner string
		token uint64
	}{{"B", a.Token}, {"A", a.Token + 1}} {
		rel, err := p.Release(ctx, rdb, bad.owner, bad.token, "bad-"+bad.owner)
		require.NoError(t, err)
		require.Equal(t, NotHeld, rel.Status)
	}
	rel, err := p.Release(ctx, rdb, "A", a.HoldID(), "rel-1")
	require.NoError(t, err)
	require.Equal(t, Released, rel.Status)
	rel, err = p.Release(ctx, rdb, "A", a.HoldID(), "rel-2")
	require.NoError(t, err)
	require.Equal(t, NotHeld, rel.Status, "released twice")

	for _, o := range []string{"X", "Y"} {
		r, err := permits(t, k, 1).AcquireNew(ctx, rdb, o, testLease, Waiter{})
		require.NoError(t, err)
		require.True(t, r.Acquired, o)
	}
	r, err := permits(t, k, 1).AcquireNew(ctx, rdb, "Z", testLease, Waiter{})
	require.NoError(t, err)
	require.False(t, r.Acquired, "2 of 2 held: the double release made nothing free")

	_, err = permits(t, k, 1).AcquireNew(ctx, rdb, "X", testLease, Waiter{})
	require.NoError(t, err, "an owner made for one call finds its own hold")
	_, err = permits(t, k, 1).Acquire(ctx, rdb, "X", "again", testLease, 0, Waiter{})
	require.ErrorIs(t, err, ErrPermitsHeld, "permits are not re-entered")
}

// SetSize: raising the size grants to waiters at once; lowering it ends
// no hold, and admits nobody until the holds take less than the new size.
func TestSemaphoreSetSize(t *testing.T) {
	ctx, rdb, k := setupShared(t, KindSemaphore, "resize", 2)
	a, err := permits(t, k, 2).AcquireNew(ctx, rdb, "A", testLease, Waiter{})
	require.NoError(t, err)
	c := newClient(t, rdb, k, "c")
	c.enqueue(t, ctx, rdb, permits(t, k, 2), "B", c.waiter("b"))
	c.enqueue(t, ctx, rdb, permits(t, k, 1), "C", c.waiter("c"))

	require.NoError(t, k.SetSize(ctx, rdb, 4, testLease))
	gs := c.grants(t)
	require.Len(t, gs, 1)
	require.Equal(t, "b", gs[0].Waiter, "granted at once")
	require.Equal(t, "4", rdb.Get(ctx, k.Size).Val())

	require.NoError(t, k.SetSize(ctx, rdb, 1, testLease))
	st, err := k.Inspect(ctx, rdb)
	require.NoError(t, err)
	require.EqualValues(t, 4, st.Used, "lowering ends no hold")
	require.EqualValues(t, 1, st.Size)
	_, err = permits(t, k, 2).Release(ctx, rdb, "A", a.HoldID(), "rel-a")
	require.NoError(t, err)
	c.requireNoMessage(t, ctx, rdb) // 2 held of 1: C does not fit
	_, err = permits(t, k, 2).Release(ctx, rdb, "B", gs[0].HoldID(), "rel-b")
	require.NoError(t, err)
	gs = c.grants(t)
	require.Equal(t, "c", gs[0].Waiter, "admitted once the holds take less than the size")

	rw, err := Namespace{}.SharedKeys(KindRW, "resize")
	require.NoError(t, err)
	require.ErrorIs(t, rw.SetSize(ctx, rdb, 3, testLease), ErrInvalidKind)
	require.ErrorIs(t, k.SetSize(ctx, rdb, 0, testLease), ErrInvalidSize)
	require.ErrorIs(t, k.SetSize(ctx, rdb, 2, 0), ErrInvalidLease)
}

// A waiter asking for more than a lowered size can never be granted: the
// grant drops it, so that the queue behind it moves, and its next look
// gets ErrInvalidPermits.
func TestSemaphoreDropsWaitersAboveALoweredSize(t *testing.T) {
	ctx, rdb, k := setupShared(t, KindSemaphore, "lowered", 4)
	a, err := permits(t, k, 2).AcquireNew(ctx, rdb, "A", testLease, Waiter{})
	require.NoError(t, err)
	c := newClient(t, rdb, k, "c")
	c.enqueue(t, ctx, rdb, permits(t, k, 3), "B", c.waiter("b"))
	c.enqueue(t, ctx, rdb, permits(t, k, 1), "C", c.waiter("c"))

	require.NoError(t, k.SetSize(ctx, rdb, 2, testLease))
	require.Equal(t, []string{"c"}, queued(t, ctx, rdb, k), "B can never fit")
	_, err = permits(t, k, 2).Release(ctx, rdb, "A", a.HoldID(), "rel-a")
	require.NoError(t, err)
	require.Equal(t, "c", c.grants(t)[0].Waiter)
	_, err = permits(t, k, 3).AcquireNew(ctx, rdb, "B", testLease, c.waiter("b"))
	require.ErrorIs(t, err, ErrInvalidPermits)
}
