package reentrant

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A semaphore's size expires, but never while anything depends on it: a
// size found missing is stored from the caller's handle, which may be
// larger than the one SetSize stored. Here SetSize(2) keeps the size for
// two leases of 200 ms; a hold of 2 permits is renewed past that, then
// waiters queue behind it with a longer lease, and the hold runs out with
// nobody looking for two more of its leases. Every call comes from a
// handle made with size 10, and none may admit more than 2.
func TestSemaphoreSizeOutlivesItsHoldsAndWaiters(t *testing.T) {
	ctx, rdb, _ := setup(t, "size")
	const lease, waiterLease = 200 * time.Millisecond, 2 * time.Second
	k := sharedKeys(t, Namespace{}, KindSemaphore, "gpu", 10)
	require.NoError(t, k.SetSize(ctx, rdb, 2, lease))
	two, one := permits(t, k, 2), permits(t, k, 1)
	held, err := two.AcquireNew(ctx, rdb, "holder", lease, Waiter{})
	require.NoError(t, err)
	require.True(t, held.Acquired)
	for range 10 { // renewed every quarter lease, for 2.5 leases
		time.Sleep(lease / 4)
		renewed, err := two.Renew(ctx, rdb, "holder", held.Token, lease)
		require.NoError(t, err)
		require.True(t, renewed)
	}
	try, err := one.AcquireNew(ctx, rdb, "try", lease, Waiter{})
	require.NoError(t, err)
	require.False(t, try.Acquired, "2 of 2 held, past SetSize's two leases")

	c := newClient(t, rdb, k, "c")
	for _, id := range []string{"w1", "w2", "w3"} {
		r, err := one.AcquireNew(ctx, rdb, id, waiterLease, c.waiter(id))
		require.NoError(t, err)
		require.False(t, r.Acquired, "%s queues behind the hold", id)
	}
	time.Sleep(4 * lease) // the hold runs out, and two more of its leases pass
	look, err := one.AcquireNew(ctx, rdb, "w1", waiterLease, c.waiter("w1"))
	require.NoError(t, err)
	require.True(t, look.Acquired, "the head is granted at its look")
	st, err := k.Inspect(ctx, rdb)
	require.NoError(t, err)
	require.EqualValues(t, 2, st.Size, "the size SetSize stored")
	require.EqualValues(t, 2, st.Used, "w1 and w2 admitted, not w3")
	require.Equal(t, []string{"w3"}, queued(t, ctx, rdb, k))
}

// SetSize never shortens what the holds kept: its own lease, shorter than
// a hold's, leaves the size to outlive the hold. A size stored with no
// expiry (by a baton before sizes expired) gets one.
func TestSetSizeKeepsTheHoldsSize(t *testing.T) {
	ctx, rdb, k := setupShared(t, KindSemaphore, "keep", 4)
	const long = 10 * time.Second
	g, err := permits(t, k, 1).AcquireNew(ctx, rdb, "holder", long, Waiter{})
	require.NoError(t, err)
	require.True(t, g.Acquired)
	require.NoError(t, k.SetSize(ctx, rdb, 2, 100*time.Millisecond))
	require.Greater(t, rdb.PTTL(ctx, k.Size).Val(), long, "two of the hold's leases")
	require.Equal(t, "2", rdb.Get(ctx, k.Size).Val())

	require.NoError(t, rdb.Persist(ctx, k.Size).Err())
	require.NoError(t, k.SetSize(ctx, rdb, 3, 100*time.Millisecond))
	ttl := rdb.PTTL(ctx, k.Size).Val()
	require.True(t, ttl > 0 && ttl <= 200*time.Millisecond, "given two of SetSize's leases: %v", ttl)
}
