package rlock

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/notify/slot"
)

// Clients queue, in order, on a member whose slot then moves to another
// master, queue included: behind a hold of m.order's first weight, one
// waiter for each weight after it (for the RW lock: writes, then a run of
// reads and a write; for a semaphore: a head that does not fit, then asks
// that would). Nobody is admitted past the head while the slot moves. Once
// their subscriptions have followed, the release hands the member down the
// queue in arrival order, by the tokens of the grants (reads take the
// last write's): nothing is lost, and the holds never weigh more than
// the member's size. (A grant made while a waiter's subscription is still
// moving finds it deaf and skips it; it queues again on its resync, and
// still gets its turn.) The clients may be dialled as a restricted user
// (see opts).
func testOrderAcrossSlotMigration(t *testing.T, cl *redistest.Cluster, m familyMember, opts ...func(*redis.ClusterOptions)) {
	ctx := testCtx(t)
	from, to := cl.Nodes[2], cl.Nodes[0]
	name := cl.TagOn(t, from, "order-"+m.kind+"-")
	holder := clusterClient(t, cl.ClusterClient(opts...))
	held, err := m.take(ctx, holder, name, m.order[0])
	require.NoError(t, err)
	queue := m.queue(t, holder, name)
	queued := func(n int) {
		t.Helper()
		require.Eventually(t, func() bool { return holder.rdb.LLen(ctx, queue).Val() == int64(n) },
			10*time.Second, 2*time.Millisecond)
	}
	asks := m.order[1:]
	k := &turnChecker{t: t, used: m.order[0], size: m.size, tokens: make([]uint64, len(asks))}
	var channels []string
	for i, weight := range asks {
		c := clusterClient(t, cl.ClusterClient(opts...))
		channels = append(channels, lockKey(name)+":grant:"+c.id)
		k.wg.Go(func() { k.turn(ctx, m, c, name, i, weight) })
		queued(i + 1)
	}
	cl.MigrateSlot(t, slot.Of(name), to)
	queued(len(asks)) // the queue moved with the member, and nobody left it
	for _, ch := range channels {
		require.Eventually(t, func() bool { return to.Admin().PubSubShardNumSub(ctx, ch).Val()[ch] == 1 },
			10*time.Second, 5*time.Millisecond, "the waiter subscribes again on the new master")
	}
	require.NoError(t, k.release(ctx, held, m.order[0]))
	k.wg.Wait()
	require.True(t, slices.IsSorted(k.tokens), "granted out of arrival order: tokens %v", k.tokens)
	for i := 1; i < len(asks); i++ {
		if k.tokens[i] == k.tokens[i-1] {
			require.True(t, m.readsShareToken && asks[i] == 1, "waiters %d and %d share token %d",
				i-1, i, k.tokens[i])
		}
	}
	requireOnlyFence(t, to.Admin(), name)
}

// turnChecker records the token of each waiter's grant, and fails the
// test if the holds ever weigh more than the member's size.
type turnChecker struct {
	t      *testing.T
	wg     sync.WaitGroup
	size   int64
	mu     sync.Mutex // guards the fields below
	used   int64
	tokens []uint64 // by waiter
}

// turn takes waiter i's hold of weight, records it, holds it a moment (so
// that holds admitted together overlap) and gives it up.
func (k *turnChecker) turn(ctx context.Context, m familyMember, c *Client, name string, i int, weight int64) {
	h, err := m.take(ctx, c, name, weight)
	if !assertNoError(k.t, err) {
		return
	}
	k.mu.Lock()
	if k.used += weight; k.used > k.size {
		k.t.Errorf("waiter %d got %d in beside %d held, of %d", i, weight, k.used-weight, k.size)
	}
	k.tokens[i] = h.token
	k.mu.Unlock()
	time.Sleep(20 * time.Millisecond)
	assertNoError(k.t, k.release(ctx, h, weight))
}

// release gives h, of weight, up, and counts it out first.
func (k *turnChecker) release(ctx context.Context, h taken, weight int64) error {
	k.mu.Lock()
	k.used -= weight
	k.mu.Unlock()
	return h.give(ctx)
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
