package rlock

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/notify/slot"
)

// Wire mode on a three-master cluster, through *redis.ClusterClient, for
// names with '{' nowhere, at the start and in the middle: the lock's hash,
// channel and latch share a slot (the scripts take all three as keys, so a
// split would be CROSSSLOT), a waiter subscribes with SSUBSCRIBE on the
// lock's shard and is woken by the SPUBLISH of another client's final
// unlock, nothing is broadcast with PUBLISH, and holders never overlap.
func TestWireOnCluster(t *testing.T) {
	ctx := testCtx(t)
	cl := redistest.StartCluster(t, 3)
	a := clusterClient(t, cl.ClusterClient(), WithRedissonWire("go-a"))
	b := clusterClient(t, cl.ClusterClient(), WithRedissonWire("go-b"))
	before := readStats(t, cl)
	for _, name := range wireNames {
		ch := javaChannel(name)
		require.Equal(t, slot.Of(name), slot.Of(ch), "%s: channel %s", name, ch)
		owner := cl.Owner(t, slot.Of(name))
		held, err := a.Lock(ctx, name)
		require.NoError(t, err)
		require.EqualValues(t, 1, owner.Admin().Exists(ctx, name).Val(), "the hash is on its slot's node")
		got := make(chan time.Time, 1)
		go func() {
			defer close(got)
			l, err := b.Lock(ctx, name, WaitAtMost(20*time.Second))
			if assertNoError(t, err) {
				got <- time.Now()
				assertNoError(t, l.Unlock(ctx))
			}
		}()
		require.Eventually(t, func() bool {
			n, err := owner.Admin().Do(ctx, "PUBSUB", "SHARDNUMSUB", ch).Slice()
			return err == nil && len(n) == 2 && n[1] == int64(1)
		}, 10*time.Second, time.Millisecond, "the waiter subscribes on the lock's shard")
		sent := time.Now()
		require.NoError(t, held.Unlock(ctx))
		at, ok := <-got
		require.True(t, ok)
		require.Less(t, at.Sub(sent), 10*time.Second, "woken by the unlock, not the 30s lease")
		<-got
	}
	testWireClusterExclusion(t, a, b)
	var spublish, ssubscribe int64
	for i, after := range readStats(t, cl) {
		d := after.Sub(before[i])
		require.Zero(t, d["publish"]+d["subscribe"], "node %s: sharded pub/sub only", cl.Nodes[i].Addr)
		spublish += d["spublish"]
		ssubscribe += d["ssubscribe"]
	}
	require.Positive(t, spublish)
	require.Positive(t, ssubscribe)
}

// testWireClusterExclusion has goroutines on both clients take every one of
// wireNames in turn; no two ever hold the same name at once.
func testWireClusterExclusion(t *testing.T, clients ...*Client) {
	ctx := testCtx(t)
	inside := make([]atomic.Int32, len(wireNames))
	var overlaps atomic.Int32
	var wg sync.WaitGroup
	for _, c := range clients {
		for range 2 {
			wg.Go(func() {
				for i := range 10 * len(wireNames) {
					n := i % len(wireNames)
					l, err := c.Lock(ctx, wireNames[n])
					if !assertNoError(t, err) {
						return
					}
					if inside[n].Add(1) != 1 {
						overlaps.Add(1)
					}
					time.Sleep(time.Millisecond)
					inside[n].Add(-1)
					assertNoError(t, l.Unlock(ctx))
				}
			})
		}
	}
	wg.Wait()
	require.Zero(t, overlaps.Load())
}
