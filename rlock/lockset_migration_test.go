package rlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/notify/slot"
)

// Issue 32 property 6: a set spanning the 3 masters' slots, with a slot
// migration while it is held and while it waits.
func TestLockSetAcrossSlotMigration(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	t.Run("Held", func(t *testing.T) { testSetHeldAcrossMigration(t, cl) })
	t.Run("Waiting", func(t *testing.T) { testSetWaitingAcrossMigration(t, cl) })
}

// elsewhere is a master that does not serve name's slot.
func elsewhere(t *testing.T, cl *redistest.Cluster, name string) *redistest.Node {
	t.Helper()
	home := cl.Owner(t, slot.Of(name))
	for _, n := range cl.Nodes {
		if n != home {
			return n
		}
	}
	t.Fatal("a cluster of one master")
	return nil
}

// A held set's member moves to another master: the set stays exclusive
// there (a Lock or a set of another client is refused, and leaves
// nothing), the watchdog keeps renewing it through three leases, its
// tokens are accepted by a fenced store and refused once the next holder
// has written, and its Unlock leaves nothing on any master.
func testSetHeldAcrossMigration(t *testing.T, cl *redistest.Cluster) {
	ctx := testCtx(t)
	c := clusterClient(t, cl.ClusterClient(), WithWatchdogLease(steadyLease))
	other := clusterClient(t, cl.ClusterClient())
	names := namePerShard(t, cl, "held-set-")
	s, err := c.LockAll(ctx, names)
	require.NoError(t, err)
	moved := names[0]
	cl.MigrateSlot(t, slot.Of(moved), elsewhere(t, cl, moved))

	_, err = other.TryLock(ctx, moved)
	require.ErrorIs(t, err, ErrNotObtained, "the moved member is free to another client")
	_, err = other.TryLockAll(ctx, names)
	require.ErrorIs(t, err, ErrNotObtained)
	owner := s.members[0].hold.owner
	for _, name := range names {
		require.Equal(t, owner, holderOf(ctx, t, c, name), "%q after the other's refused set", name)
	}
	store := cl.ClusterClient()
	defer store.Close()
	for _, name := range names {
		ok, err := fencedWrite(ctx, store, "fenced-store:"+name, s.Token(name), "set")
		require.NoError(t, err)
		require.True(t, ok, "%q's token refused", name)
	}

	time.Sleep(3 * steadyLease) // renewed across the move, or lost
	require.NoError(t, s.Context().Err(), "a member was lost: %v", context.Cause(s.Context()))
	require.Greater(t, cl.Owner(t, slot.Of(moved)).Admin().PTTL(ctx, lockKey(moved)).Val(), steadyLease/3,
		"the moved member's lease is not renewed on its new master")

	require.NoError(t, s.Unlock(ctx))
	for _, name := range names {
		l, err := other.TryLock(ctx, name)
		require.NoError(t, err, "%q after the set's Unlock", name)
		require.Greater(t, l.Token(), s.Token(name), "%q's token did not rise", name)
		ok, err := fencedWrite(ctx, store, "fenced-store:"+name, l.Token(), "next")
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = fencedWrite(ctx, store, "fenced-store:"+name, s.Token(name), "stale")
		require.NoError(t, err)
		require.False(t, ok, "%q: the set's stale token was accepted", name)
		require.NoError(t, l.Unlock(ctx))
	}
	requireOnlyFenceOn(t, cl, names...)
}

// A set holds its first members and waits for its last, held by another
// client; the slot of the member it waits for moves, queue included, and
// so does the slot of a member it holds. While it waits, what it holds
// stays exclusive and it does not take the held member; its waiter
// subscribes again on the new master, and the holder's Unlock there hands
// it the member at once, with a higher token. Its Unlock leaves nothing.
func testSetWaitingAcrossMigration(t *testing.T, cl *redistest.Cluster) {
	ctx := testCtx(t)
	c, holder, other := clusterClient(t, cl.ClusterClient()), clusterClient(t, cl.ClusterClient()), clusterClient(t, cl.ClusterClient())
	names := namePerShard(t, cl, "wait-set-")
	order := inOrder(t, c, names...)
	first, last := order[0], order[len(order)-1]
	x, err := holder.Lock(ctx, last, WithLease(longLease))
	require.NoError(t, err)
	waiting := lockAllInBackground(ctx, c, names)
	queue := lockKey(last) + ":queue"
	require.Eventually(t, func() bool {
		return holderOf(ctx, t, c, first) != "" && cl.Owner(t, slot.Of(last)).Admin().LLen(ctx, queue).Val() == 1
	}, fast, 5*time.Millisecond, "the set does not hold its first member and wait for its last")

	to := elsewhere(t, cl, last)
	cl.MigrateSlot(t, slot.Of(last), to)
	cl.MigrateSlot(t, slot.Of(first), elsewhere(t, cl, first))
	require.EqualValues(t, 1, to.Admin().LLen(ctx, queue).Val(), "the queue did not move with the member")
	channel := lockKey(last) + ":grant:" + c.id
	require.Eventually(t, func() bool { return to.Admin().PubSubShardNumSub(ctx, channel).Val()[channel] == 1 },
		10*time.Second, 5*time.Millisecond, "the set's waiter subscribes again on the new master")
	_, err = other.TryLock(ctx, first)
	require.ErrorIs(t, err, ErrNotObtained, "the set's moved member is free to another client")
	select {
	case o := <-waiting:
		t.Fatalf("the set returned while its last member was held: %v", o.err)
	case <-time.After(200 * time.Millisecond):
	}

	released := time.Now()
	require.NoError(t, x.Unlock(ctx))
	s := receiveWholeSet(ctx, t, c, waiting, order...)
	require.Less(t, time.Since(released), fast, "woken by the lease, not the grant")
	require.Greater(t, s.Token(last), x.Token(), "the set's token of the member it waited for")
	require.NoError(t, s.Unlock(ctx))
	requireOnlyFenceOn(t, cl, names...)
}
