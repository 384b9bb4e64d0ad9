package rlock

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/notify/slot"
	"github.com/batonlock/baton/reentrant"
)

// TestOnCluster runs the lock, the RW lock and the semaphore
// against a real three-master Redis Cluster. The subtests share
// one cluster, because creating one takes seconds; some move slots, so
// every subtest looks up who serves its slots.
func TestOnCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	t.Run("ScriptsStaySingleSlot", func(t *testing.T) { testScriptsStaySingleSlot(t, cl) })
	t.Run("LivenessKeysWithClassicPubSub", func(t *testing.T) { testLivenessKeysWithClassicPubSub(t, cl) })
	t.Run("ReentrancyAndWakeOnAnotherShard", func(t *testing.T) { testReentrancyOnAnotherShard(t, cl) })
	t.Run("WatchdogRenewsOnEveryShard", func(t *testing.T) { testWatchdogOnEveryShard(t, cl) })
	t.Run("SlotMigrationMidWait", func(t *testing.T) { testSlotMigrationMidWait(t, cl) })
	for _, m := range []familyMember{plainMember, rwMember, semMember} {
		t.Run("MutualExclusionSharded/"+m.kind, func(t *testing.T) { testClusterMutualExclusion(t, cl, m, "spublish") })
		t.Run("MutualExclusionClassic/"+m.kind, func(t *testing.T) {
			testClusterMutualExclusion(t, cl, m, "publish", WithClassicPubSub())
		})
		t.Run("KeysInOneSlot/"+m.kind, func(t *testing.T) { testFamilySingleSlot(t, cl, m, "spublish") })
		t.Run("KeysInOneSlotClassic/"+m.kind, func(t *testing.T) {
			testFamilySingleSlot(t, cl, m, "publish", WithClassicPubSub())
		})
		t.Run("OrderAcrossASlotMigration/"+m.kind, func(t *testing.T) { testOrderAcrossSlotMigration(t, cl, m) })
	}
	for _, m := range []familyMember{rwMember, semMember} {
		t.Run("BatchGrant/"+m.kind, func(t *testing.T) { testBatchGrant(t, cl, m, nil) })
		t.Run("UnderACLClusterRulesAcrossASlotMigration/"+m.kind, func(t *testing.T) {
			testOrderAcrossSlotMigration(t, cl, m, aclUser(t, cl, m.kind+"cluster"))
		})
	}
	t.Run("SetSizeGrantsAtOnce", func(t *testing.T) { testBatchGrant(t, cl, semMember, setSize) })
}

// clusterClient is a Client on a cluster connection pool of its own, like a
// separate process would have.
func clusterClient(t *testing.T, rdb *redis.ClusterClient, opts ...Option) *Client {
	t.Helper()
	c, err := New(rdb, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// namePerShard returns one lock name served by each node, in node order.
func namePerShard(t *testing.T, cl *redistest.Cluster, prefix string) []string {
	t.Helper()
	names := make([]string, len(cl.Nodes))
	for i, n := range cl.Nodes {
		// The lock's keys carry the name as their hash tag.
		names[i] = cl.TagOn(t, n, prefix)
	}
	return names
}

// Every script touches the keys of one lock only, all tagged with its name,
// so on a cluster none may fail with CROSSSLOT, whichever shard serves it.
func testScriptsStaySingleSlot(t *testing.T, cl *redistest.Cluster) {
	ctx := testCtx(t)
	c, other := clusterClient(t, cl.ClusterClient()), clusterClient(t, cl.ClusterClient())
	before := readStats(t, cl)
	for i := range 60 {
		name := fmt.Sprintf("slot-%d", i)
		outer, err := c.Lock(ctx, name)
		require.NoError(t, err)
		inner, err := c.Lock(outer.Context(), name) // re-entry
		require.NoError(t, err)
		_, err = other.TryLock(ctx, name) // the "held" reply, with its PTTL
		require.ErrorIs(t, err, ErrNotObtained)
		st, err := other.Inspect(ctx, name)
		require.NoError(t, err)
		require.Equal(t, map[string]int64{outer.Owner(): 2}, st.Holders)
		require.NoError(t, inner.Unlock(ctx)) // partial release
		got := make(chan *Lock, 1)
		go func() {
			l, err := other.Lock(ctx, name) // queues, on the lock's shard
			assertNoError(t, err)
			got <- l
		}()
		require.Eventually(t, func() bool { return other.rdb.LLen(ctx, lockKey(name)+":queue").Val() == 1 },
			5*time.Second, time.Millisecond)
		require.NoError(t, outer.Unlock(ctx)) // release, and grant with SPUBLISH
		require.NoError(t, (<-got).Unlock(ctx))
		fixed, err := c.Lock(ctx, name, WithLease(time.Minute))
		require.NoError(t, err)
		forced, err := other.ForceUnlock(ctx, name)
		require.NoError(t, err)
		require.EqualValues(t, 1, forced)
		require.ErrorIs(t, fixed.Unlock(ctx), ErrLockLost, "force-released by another client")
	}
	requirePublishedWith(t, cl, before, "spublish")
}

// readStats reads the command counters of every node.
func readStats(t *testing.T, cl *redistest.Cluster) []redistest.CommandStats {
	t.Helper()
	stats := make([]redistest.CommandStats, len(cl.Nodes))
	for i, n := range cl.Nodes {
		var err error
		stats[i], err = redistest.ReadCommandStats(testCtx(t), n.Admin())
		require.NoError(t, err)
	}
	return stats
}

// The mutual-exclusion counter of TestMutualExclusion, generalized to a
// capacity: one member's holds of one name on each shard, every other one
// exclusive (weight m.size) and the rest of weight 1, and one counter on
// each shard that only the exclusive holds update, so every shard's
// pub/sub connection must work. The holds of a name never weigh more than
// m.size at once, and no update of the counter is lost. Releases must
// publish with publish ("publish" or "spublish") only.
func testClusterMutualExclusion(t *testing.T, cl *redistest.Cluster, m familyMember, publish string, opts ...Option) {
	ctx := testCtx(t)
	rdb := cl.ClusterClient()
	names := namePerShard(t, cl, "mx-"+m.kind+"-"+publish+"-")
	before := readStats(t, cl)
	const clients, perClient, perName = 3, 4, 250
	var occupancy, maxOccupancy, exclusive [3]atomic.Int64
	var next, slowest atomic.Int64
	var wg sync.WaitGroup
	var c0 *Client // any of the clients, for the names' keys
	for range clients {
		c := clusterClient(t, cl.ClusterClient(), opts...)
		c0 = c
		for range perClient {
			wg.Go(func() {
				for {
					i := next.Add(1) - 1
					if i >= perName*int64(len(names)) {
						return
					}
					s := i % int64(len(names))
					weight := []int64{m.size, 1}[i/int64(len(names))%2]
					start := time.Now()
					h, err := m.take(ctx, c, names[s], weight)
					if !assertNoError(t, err) {
						return
					}
					if took := time.Since(start); int64(took) > slowest.Load() {
						slowest.Store(int64(took))
					}
					if n := occupancy[s].Add(weight); n > maxOccupancy[s].Load() {
						maxOccupancy[s].Store(n)
					}
					if weight == m.size {
						exclusive[s].Add(1)
						counter := "count:{" + names[s] + "}"
						v, _ := rdb.Get(ctx, counter).Int()
						assertNoError(t, rdb.Set(ctx, counter, v+1, 0).Err())
					}
					occupancy[s].Add(-weight)
					assertNoError(t, h.give(ctx))
				}
			})
		}
	}
	wg.Wait()
	for s, name := range names {
		got, err := rdb.Get(ctx, "count:{"+name+"}").Int()
		require.NoError(t, err)
		require.EqualValues(t, exclusive[s].Load(), got, "lost updates on %s", name)
		require.LessOrEqual(t, maxOccupancy[s].Load(), m.size, "more than the size held of %s at once", name)
		require.Zero(t, rdb.Exists(ctx, m.keys(t, c0, name)[0]).Val(), "%s held after the last release", name)
		require.NoError(t, rdb.Del(ctx, "count:{"+name+"}").Err())
	}
	requireOnlyFenceOn(t, cl, names...)
	// A release that woke nobody leaves its waiter to sleep out the
	// holder's 30s watchdog lease.
	require.Less(t, time.Duration(slowest.Load()), 10*time.Second, "a wake-up was lost")
	requirePublishedWith(t, cl, before, publish)
}

// requirePublishedWith fails unless, since before, every node ran scripts
// (the names spread over every shard) and published its own grants with
// publish ("publish" or "spublish") only.
func requirePublishedWith(t *testing.T, cl *redistest.Cluster, before []redistest.CommandStats, publish string) {
	t.Helper()
	other := map[string]string{"publish": "spublish", "spublish": "publish"}[publish]
	for i, after := range readStats(t, cl) {
		d := after.Sub(before[i])
		addr := cl.Nodes[i].Addr
		require.Positive(t, d["evalsha"]+d["eval"], "node %s ran scripts", addr)
		require.Positive(t, d[publish], "releases on %s use %s", addr, publish)
		require.Zero(t, d[other], "and never %s", other)
	}
}

// With PUBLISH on a cluster, a waiter's client listens on whatever node its
// grant channel hashes to, and the release's receiver count (this node's
// only) cannot tell a live waiter from a dead one. Liveness keys do: a live
// waiter listening on another node than the lock's, waiting through many
// liveness TTLs, still gets the release; a waiter that crashed after
// queueing first is skipped once its key has run out, so the live one gets
// the lock at the release, not after the dead one's lease. A grant's lease
// holds only until its waiter confirms it, so even a waiter that crashed
// while its key lived costs that short lease, not its own.
func testLivenessKeysWithClassicPubSub(t *testing.T, cl *redistest.Cluster) {
	ctx := testCtx(t)
	const aliveTTL = 150 * time.Millisecond
	rdb := cl.ClusterClient()
	waiter := clusterClient(t, cl.ClusterClient(), WithClassicPubSub(), WithLivenessTTL(aliveTTL))
	holder := clusterClient(t, cl.ClusterClient(), WithClassicPubSub(), WithLivenessTTL(aliveTTL))
	var name string
	for _, candidate := range namePerShard(t, cl, "alive-") {
		keys, err := waiter.lockKeys(candidate)
		require.NoError(t, err)
		if cl.Owner(t, slot.Of(keys.Hash)) != cl.Owner(t, slot.Of(keys.GrantChannel(waiter.id))) {
			name = candidate
			break
		}
	}
	require.NotEmpty(t, name)

	h, err := holder.Lock(ctx, name, WithLease(longLease))
	require.NoError(t, err)
	keys, err := reentrant.Namespace{ReceiversElsewhere: true, AliveTTL: aliveTTL}.Keys(name)
	require.NoError(t, err)
	crashed := keys.Waiter("crashed", "gone")
	r, err := keys.AcquireNew(ctx, rdb, "crashed-owner", longLease, crashed)
	require.NoError(t, err)
	require.False(t, r.Acquired)
	got := lockInBackground(ctx, waiter, name)
	require.Eventually(t, func() bool { return rdb.LLen(ctx, keys.Queue).Val() == 2 }, fast, 2*time.Millisecond)
	require.Eventually(t, func() bool { return rdb.Exists(ctx, crashed.Alive).Val() == 0 }, fast, 5*time.Millisecond)
	time.Sleep(3 * aliveTTL) // the live waiter keeps its key through many TTLs

	require.NoError(t, h.Unlock(ctx))
	l := receive(t, got)
	require.Equal(t, "1", rdb.HGet(ctx, keys.Hash, l.Owner()).Val())
	require.Zero(t, rdb.LLen(ctx, keys.Queue).Val(), "the crashed waiter's entry was dropped")

	// The grant's lease held only until confirmed; the waiter's client
	// confirmed it, so the lock outlives the liveness TTL.
	time.Sleep(3 * aliveTTL)
	require.NoError(t, l.Context().Err())
	require.Greater(t, rdb.PTTL(ctx, keys.Hash).Val(), aliveTTL)

	// A waiter that crashed while its key still lived is granted, but only
	// for the unconfirmed lease: the next waiter gets the lock after that,
	// not after the crashed one's 30s lease.
	crashed = keys.Waiter("crashed-2", "gone-2")
	_, err = keys.AcquireNew(ctx, rdb, "crashed-owner-2", longLease, crashed)
	require.NoError(t, err)
	next := lockInBackground(ctx, holder, name)
	require.Eventually(t, func() bool { return rdb.LLen(ctx, keys.Queue).Val() == 2 }, fast, 2*time.Millisecond)
	// Its last look was just now, however long the queueing above took.
	require.NoError(t, rdb.Set(ctx, crashed.Alive, 1, aliveTTL).Err())
	require.NoError(t, l.Unlock(ctx))
	require.Equal(t, "1", rdb.HGet(ctx, keys.Hash, "crashed-owner-2").Val(), "granted while its key lived")
	last := receive(t, next)
	require.NoError(t, last.Unlock(ctx))
}

// The lock lives on a shard other than the one the clients learn the
// topology from; re-entry works there, and the waiter is woken by the
// SPUBLISH of the last release, long before the holder's lease ends.
func testReentrancyOnAnotherShard(t *testing.T, cl *redistest.Cluster) {
	ctx := testCtx(t)
	seed, home := cl.Nodes[0], cl.Nodes[2]
	seeded := func(o *redis.ClusterOptions) { o.Addrs = []string{seed.Addr} }
	holder := clusterClient(t, cl.ClusterClient(seeded))
	waiter := clusterClient(t, cl.ClusterClient(seeded))
	name := cl.TagOn(t, home, "re-")
	channel := lockKey(name) + ":grant:" + waiter.id

	l1, err := holder.Lock(ctx, name, WithLease(longLease))
	require.NoError(t, err)
	l2, err := holder.Lock(l1.Context(), name, WithLease(longLease))
	require.NoError(t, err)
	l3, err := holder.Lock(l2.Context(), name, WithLease(longLease))
	require.NoError(t, err)
	require.Equal(t, l1.Token(), l3.Token(), "re-entry keeps the token")
	held, err := home.Admin().HGet(ctx, lockKey(name), l1.Owner()).Int()
	require.NoError(t, err, "the lock is on its own shard")
	require.Equal(t, 3, held)

	got := make(chan *Lock, 1)
	go func() {
		l, err := waiter.Lock(ctx, name)
		assertNoError(t, err)
		got <- l
	}()
	require.Eventually(t, func() bool {
		return home.Admin().PubSubShardNumSub(ctx, channel).Val()[channel] == 1
	}, 5*time.Second, 5*time.Millisecond, "the waiter subscribes on the lock's shard")
	for _, l := range []*Lock{l3, l2} {
		require.NoError(t, l.Unlock(ctx))
		select {
		case <-got:
			t.Fatal("the waiter got in before the last Unlock")
		case <-time.After(50 * time.Millisecond):
		}
	}
	released := time.Now()
	require.NoError(t, l1.Unlock(ctx))
	select {
	case l := <-got:
		require.Less(t, time.Since(released), fast)
		require.Greater(t, l.Token(), l1.Token())
		require.NoError(t, l.Unlock(ctx))
	case <-time.After(fast):
		t.Fatalf("the waiter was not woken within %v; the holder's lease was %v", fast, longLease)
	}
}

// A client holding locks, RW locks and permits on all three shards keeps
// them over several short leases, and each renewal round sends one
// pipeline per node, carrying every hold on that node, whatever its kind,
// in one script per slot: on each node, a lock, an RW read and a permit of
// one name (one slot) and a lock of another name are two scripts.
func testWatchdogOnEveryShard(t *testing.T, cl *redistest.Cluster) {
	ctx := testCtx(t)
	rdb := cl.ClusterClient()
	pipelines := redistest.CountPipelines(rdb)
	// Longer than shortLease: a renewal round here is three pipelines to
	// three servers, and a busy machine must not stall them past the lease.
	const lease = 900 * time.Millisecond
	c := clusterClient(t, rdb, WithWatchdogLease(lease))
	type watched struct {
		taken
		name string
		hash string // its holds' key
	}
	var holds []watched
	take := func(m familyMember, name string) {
		h, err := m.take(ctx, c, name, 1)
		require.NoError(t, err)
		holds = append(holds, watched{h, name, m.keys(t, c, name)[0]})
	}
	others := namePerShard(t, cl, "w-other-")
	for i, name := range namePerShard(t, cl, "w-") {
		require.NotEqual(t, slot.Of(name), slot.Of(others[i]))
		for _, m := range []familyMember{plainMember, rwMember, semMember} {
			take(m, name)
		}
		take(plainMember, others[i])
	}
	const slotsPerShard = 2
	// Leases taken a few ms apart may fall in different first rounds; from
	// the second tick on they are renewed together.
	time.Sleep(2 * lease / 3)
	pipelines.Take()
	callsBefore := c.wd.Stats().RenewCalls

	admin := cl.ClusterClient()
	minTTL := lease
	for end := time.Now().Add(4 * lease); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		for _, h := range holds {
			ttl, err := admin.PTTL(ctx, h.hash).Result()
			require.NoError(t, err)
			require.Positive(t, ttl, "%s expired while held", h.hash)
			require.NoError(t, h.ctx.Err(), "%s was lost", h.hash)
			minTTL = min(minTTL, ttl)
		}
	}
	t.Logf("lowest PTTL over 4 leases: %v (lease %v); %+v", minTTL, lease, c.wd.Stats())
	sizes, calls := pipelines.Take(), c.wd.Stats().RenewCalls-callsBefore
	require.GreaterOrEqual(t, calls, uint64(8), "4 leases are 12 ticks")
	require.Len(t, sizes, len(cl.Nodes), "every node got renewals")
	for addr, s := range sizes {
		// A round in flight at either end of the window may be counted on
		// one side only.
		require.InDelta(t, calls, len(s), 1, "one pipeline per renewal round on %s", addr)
		for _, n := range s {
			require.Equal(t, slotsPerShard, n, "every pipeline to %s carries one script per slot: %v", addr, s)
		}
	}
	for _, h := range holds {
		require.NoError(t, h.give(ctx))
	}
	for _, h := range holds {
		requireOnlyFenceOn(t, cl, h.name)
	}
	require.Zero(t, c.wd.Len())
}

// requireOnlyFenceOn is requireOnlyFence for each of names on the node
// that serves it.
func requireOnlyFenceOn(t *testing.T, cl *redistest.Cluster, names ...string) {
	t.Helper()
	for _, name := range names {
		requireOnlyFence(t, cl.Owner(t, slot.Of(name)).Admin(), name)
	}
}
