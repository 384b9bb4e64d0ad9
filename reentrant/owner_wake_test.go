package reentrant

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// A grant to a given owner's waiter wakes that owner's other waiters in
// the queue, and only those: each looks, and re-enters the hold its owner
// now has, as a new call of the owner would (outside attack 6: before, they
// stayed queued behind their own owner's hold until their periodic look).
func TestGrantToAnOwnerWakesItsOtherWaiters(t *testing.T) {
	ctx, rdb, l := setup(t, "ownerwake")
	a, err := l.AcquireNew(ctx, rdb, "A", testLease, Waiter{})
	require.NoError(t, err)
	subs := map[string]*redis.PubSub{}
	waiters := map[string]Waiter{}
	for _, q := range []struct{ id, owner string }{{"b1", "job"}, {"d", "D"}, {"b2", "job"}} {
		subs[q.id], waiters[q.id] = subscribed(t, rdb, l, q.id)
		r, err := l.Acquire(ctx, rdb, q.owner, "queue-"+q.id, testLease, 0, waiters[q.id])
		require.NoError(t, err)
		require.False(t, r.Acquired)
	}

	_, err = l.Release(ctx, rdb, "A", a.Token, "rel-a")
	require.NoError(t, err)
	g := receiveGrant(t, subs["b1"])
	require.Equal(t, "b1", g.Waiter)
	require.Equal(t, "b2 wake", receivePayload(t, subs["b2"]), "the owner's other waiter is woken")

	r, err := l.Acquire(ctx, rdb, "job", "look-b2", testLease, 0, waiters["b2"])
	require.NoError(t, err)
	require.True(t, r.Acquired, "the woken waiter re-enters its owner's hold")
	require.Equal(t, int64(2), r.HoldCount)
	require.Equal(t, g.Token, r.Token)
	queue, err := rdb.LRange(ctx, l.Queue, 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, queue, 1, "only D's waiter is left queued")

	// D was not woken by the owner's grant: its first message is its own
	// grant, once the owner's two counts are released.
	for _, id := range []string{"rel-b1", "rel-b2"} {
		_, err = l.Release(ctx, rdb, "job", g.Token, id)
		require.NoError(t, err)
	}
	require.Equal(t, "d", receiveGrant(t, subs["d"]).Waiter)
}

// A look of a given owner's waiter that finds the lock free behind a queue
// whose head is another waiter of its owner grants that head, and then
// must not stay queued behind its own owner's hold: the script tells
// Acquire to run it again at once, and that run re-enters.
func TestLookThatGrantsItsOwnersWaiterReenters(t *testing.T) {
	ctx, rdb, l := setup(t, "ownerlook")
	_, err := l.AcquireNew(ctx, rdb, "A", testLease, Waiter{})
	require.NoError(t, err)
	subB, wB := subscribed(t, rdb, l, "b")
	_, err = l.Acquire(ctx, rdb, "job", "queue-b", testLease, 0, wB)
	require.NoError(t, err)
	require.NoError(t, rdb.Del(ctx, l.Hash).Err()) // A's lease ran out

	_, wC := subscribed(t, rdb, l, "c")
	r, err := l.Acquire(ctx, rdb, "job", "look-c", testLease, 0, wC)
	require.NoError(t, err)
	g := receiveGrant(t, subB)
	require.Equal(t, "b", g.Waiter, "the head is granted")
	require.Equal(t, AcquireResult{Acquired: true, HoldCount: 2, Token: g.Token}, r, "and c re-enters its hold")
	n, err := rdb.LLen(ctx, l.Queue).Result()
	require.NoError(t, err)
	require.Zero(t, n, "c left the queue")
}
