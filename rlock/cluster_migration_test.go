package rlock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/notify/slot"
)

// Three clients queue, in order, on a lock whose slot then moves to another
// master, queue included. Once their subscriptions have followed, the
// releases hand the lock down the queue in arrival order. (A grant made
// while a waiter's subscription is still moving finds it deaf and skips it;
// it queues again on its resync, and still gets the lock.)
func testFIFOAcrossSlotMigration(t *testing.T, cl *redistest.Cluster) {
	ctx := testCtx(t)
	from, to := cl.Nodes[2], cl.Nodes[0]
	name := cl.TagOn(t, from, "fifo-")
	holder := clusterClient(t, cl.ClusterClient())
	l, err := holder.Lock(ctx, name, WithLease(longLease))
	require.NoError(t, err)
	queued := func(n int64) {
		t.Helper()
		require.Eventually(t, func() bool { return holder.rdb.LLen(ctx, lockKey(name)+":queue").Val() == n },
			10*time.Second, 2*time.Millisecond)
	}
	var turns arrivals
	var channels []string
	for i := range 3 {
		c := clusterClient(t, cl.ClusterClient())
		channels = append(channels, lockKey(name)+":grant:"+c.id)
		turns.lockInTurn(ctx, t, c, name, i)
		queued(int64(i + 1))
	}
	cl.MigrateSlot(t, slot.Of(name), to)
	queued(3) // the queue moved with the lock
	for _, ch := range channels {
		require.Eventually(t, func() bool { return to.Admin().PubSubShardNumSub(ctx, ch).Val()[ch] == 1 },
			10*time.Second, 5*time.Millisecond, "the waiter subscribes again on the new master")
	}
	require.NoError(t, l.Unlock(ctx))
	require.Equal(t, []int{0, 1, 2}, turns.order(), "acquisition order is arrival order")
}

// A waiter's slot moves to another master while the lock is held: the old
// owner drops the shard channel, the hub subscribes again on the new owner,
// and the release there wakes the waiter long before the holder's lease.
func testSlotMigrationMidWait(t *testing.T, cl *redistest.Cluster) {
	ctx := testCtx(t)
	from, to := cl.Nodes[0], cl.Nodes[1]
	name := cl.TagOn(t, from, "mig-")
	holder, waiter := clusterClient(t, cl.ClusterClient()), clusterClient(t, cl.ClusterClient())
	channel := lockKey(name) + ":grant:" + waiter.id
	l, err := holder.Lock(ctx, name, WithLease(longLease))
	require.NoError(t, err)

	got := make(chan *Lock, 1)
	go func() {
		l, err := waiter.Lock(ctx, name)
		assertNoError(t, err)
		got <- l
	}()
	shardNumSub := func(n *redistest.Node) int64 {
		return n.Admin().PubSubShardNumSub(ctx, channel).Val()[channel]
	}
	require.Eventually(t, func() bool { return shardNumSub(from) == 1 }, 5*time.Second, 5*time.Millisecond)

	cl.MigrateSlot(t, slot.Of(name), to)
	require.Eventually(t, func() bool { return shardNumSub(to) == 1 }, 10*time.Second, 5*time.Millisecond,
		"the waiter subscribes again on the new owner")
	require.Zero(t, shardNumSub(from), "the old owner dropped the channel")
	// Resubscribing woke the waiter to retry; the lock, migrated with its
	// lease, is still held, so it waits again, on the new subscription.
	select {
	case <-got:
		t.Fatal("the waiter got a lock that is still held")
	case <-time.After(200 * time.Millisecond):
	}
	require.Greater(t, holder.rdb.PTTL(ctx, lockKey(name)).Val(), longLease-10*time.Second)

	released := time.Now()
	require.NoError(t, l.Unlock(ctx))
	select {
	case l := <-got:
		require.Less(t, time.Since(released), fast)
		require.NoError(t, l.Unlock(ctx))
	case <-time.After(fast):
		t.Fatalf("the waiter was not woken within %v after the migration; the lease was %v", fast, longLease)
	}
}
