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
// master, queue included: exclusive waiters, then (for a member that
// shares) a run of shared ones and an exclusive one after them. Once
// their subscriptions have followed, the release hands the member down the
// queue in arrival order, a run of shared waiters as one unit: nothing is
// lost, and no exclusive hold ever overlaps another hold. (A grant made
// while a waiter's subscription is still moving finds it deaf and skips
// it; it queues again on its resync, and still gets its turn.) The clients
// may be dialled as a restricted user (see opts).
func testOrderAcrossSlotMigration(t *testing.T, cl *redistest.Cluster, m familyMember, opts ...func(*redis.ClusterOptions)) {
	ctx := testCtx(t)
	from, to := cl.Nodes[2], cl.Nodes[0]
	name := cl.TagOn(t, from, "order-"+m.kind+"-")
	holder := clusterClient(t, cl.ClusterClient(opts...))
	release, err := m.take(ctx, holder, name, false)
	require.NoError(t, err)
	queue := m.queue(t, holder, name)
	queued := func(n int) {
		t.Helper()
		require.Eventually(t, func() bool { return holder.rdb.LLen(ctx, queue).Val() == int64(n) },
			10*time.Second, 2*time.Millisecond)
	}
	shared := []bool{false, false, false}
	if m.shares {
		shared = append(shared, true, true, true, false)
	}
	k := &turnChecker{t: t}
	var channels []string
	for i, s := range shared {
		c := clusterClient(t, cl.ClusterClient(opts...))
		channels = append(channels, lockKey(name)+":grant:"+c.id)
		k.wg.Go(func() { k.turn(ctx, m, c, name, i, s) })
		queued(i + 1)
	}
	cl.MigrateSlot(t, slot.Of(name), to)
	queued(len(shared)) // the queue moved with the member
	for _, ch := range channels {
		require.Eventually(t, func() bool { return to.Admin().PubSubShardNumSub(ctx, ch).Val()[ch] == 1 },
			10*time.Second, 5*time.Millisecond, "the waiter subscribes again on the new master")
	}
	require.NoError(t, release(ctx))
	k.wg.Wait()
	require.Equal(t, runs(shared), k.units(), "grant order is arrival order, a run of shared waiters one unit")
	requireOnlyFence(t, to.Admin(), name)
}

// turnChecker records the order in which waiters got their holds, and
// fails the test if an exclusive hold ever overlaps another hold.
type turnChecker struct {
	t         *testing.T
	wg        sync.WaitGroup
	mu        sync.Mutex // guards the fields below
	exclusive bool
	shared    int
	order     [][]int // units: the waiters that held together
}

// turn takes waiter i's hold, records it, holds it a moment (so that a
// unit's holds overlap) and gives it up.
func (k *turnChecker) turn(ctx context.Context, m familyMember, c *Client, name string, i int, shared bool) {
	give, err := m.take(ctx, c, name, shared)
	if !assertNoError(k.t, err) {
		return
	}
	k.mu.Lock()
	switch {
	case k.exclusive || (!shared && k.shared > 0):
		k.t.Errorf("waiter %d got in beside another hold", i)
	case shared && k.shared > 0:
		last := len(k.order) - 1
		k.order[last] = append(k.order[last], i)
	default:
		k.order = append(k.order, []int{i})
	}
	if shared {
		k.shared++
	} else {
		k.exclusive = true
	}
	k.mu.Unlock()
	time.Sleep(20 * time.Millisecond)
	k.mu.Lock()
	if shared {
		k.shared--
	} else {
		k.exclusive = false
	}
	k.mu.Unlock()
	assertNoError(k.t, give(ctx))
}

// units are the recorded units, each sorted.
func (k *turnChecker) units() [][]int {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([][]int, len(k.order))
	for i, u := range k.order {
		out[i] = slices.Sorted(slices.Values(u))
	}
	return out
}

// runs are the units in which waiters queued so are granted: each
// exclusive one alone, each run of shared ones together.
func runs(shared []bool) [][]int {
	var out [][]int
	for i, s := range shared {
		if s && i > 0 && shared[i-1] {
			out[len(out)-1] = append(out[len(out)-1], i)
			continue
		}
		out = append(out, []int{i})
	}
	return out
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
