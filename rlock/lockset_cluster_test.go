package rlock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/notify/slot"
)

// Property 4 on a cluster: a free set across s slots is s script calls,
// one per slot, each on its slot's master, and so is its Unlock; a set
// spanning the shards waits for a held member on another shard and ends
// whole, and TryLockAll on it partly held holds nothing.
func TestLockSetOnCluster(t *testing.T) {
	ctx := testCtx(t)
	cl := redistest.StartCluster(t, 3)
	c, other := clusterClient(t, cl.ClusterClient()), clusterClient(t, cl.ClusterClient())
	names := append(sameSlotNames("cl", 2), namePerShard(t, cl, "set-")...)
	slots := map[int]bool{}
	for _, name := range names {
		slots[slot.Of(lockKey(name))] = true
	}
	warm, err := c.LockAll(ctx, names) // caches the scripts on every master
	require.NoError(t, err)
	require.NoError(t, warm.Unlock(ctx))

	before := readStats(t, cl)
	s, err := c.LockAll(ctx, names)
	require.NoError(t, err)
	require.EqualValues(t, len(slots), scriptCalls(t, readStats(t, cl), before), "one script call per slot")
	got := s.Names()
	for i := 1; i < len(got); i++ {
		require.LessOrEqual(t, slot.Of(lockKey(got[i-1])), slot.Of(lockKey(got[i])), "not in slot order: %v", got)
	}
	before = readStats(t, cl)
	require.NoError(t, s.Unlock(ctx))
	require.EqualValues(t, len(slots), scriptCalls(t, readStats(t, cl), before), "one release per slot")

	last := got[len(got)-1]
	holder, err := other.Lock(ctx, last)
	require.NoError(t, err)
	_, err = c.TryLockAll(ctx, names)
	require.ErrorIs(t, err, ErrNotObtained)
	for _, name := range got[:len(got)-1] {
		require.Empty(t, holderOf(ctx, t, c, name), "%q is held", name)
	}
	waiting := lockAllInBackground(ctx, c, names)
	require.Eventually(t, func() bool { return holderOf(ctx, t, c, got[0]) != "" }, fast, 10*time.Millisecond)
	require.NoError(t, holder.Unlock(ctx))
	require.NoError(t, receiveWholeSet(ctx, t, c, waiting, got...).Unlock(ctx))
	for _, name := range got {
		require.Empty(t, holderOf(ctx, t, c, name))
	}
}
