package rlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// Issue 31 on a cluster: a grant waits for the replicas of its own shard
// only. Of three masters, the first has a replica; the others have none.
func TestReplicaAcksOnCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	replica := cl.AddReplica(t, cl.Nodes[0])
	for _, m := range []familyMember{plainMember, rwMember, semMember} {
		t.Run("DefaultWaitsOnItsShardOnly/"+m.kind, func(t *testing.T) { testAcksOnItsShardOnly(t, cl, replica, m) })
		t.Run("ExplicitOnAShardWithoutReplicas/"+m.kind, func(t *testing.T) { testAcksWithoutShardReplicas(t, cl, m) })
	}
}

// By default, a grant on the shard with the replica is acknowledged (WAIT
// on that master, nowhere else), and one on a shard without replicas
// waits for none: not even while the other shard's replica is stopped,
// and its WAIT blocks a grant there of the same client, which then fails
// with ErrNotReplicated.
func testAcksOnItsShardOnly(t *testing.T, cl *redistest.Cluster, replica *redistest.Node, m familyMember) {
	ctx := testCtx(t)
	c := clusterClient(t, cl.ClusterClient())
	names := namePerShard(t, cl, "acks-"+m.kind+"-")
	before := readStats(t, cl)
	for _, name := range names {
		h, err := m.take(ctx, c, name, m.size)
		require.NoError(t, err, "%s's grant", name)
		require.NoError(t, h.give(ctx))
	}
	after := readStats(t, cl)
	require.Positive(t, after[0]["wait"]-before[0]["wait"], "the grant on the shard with the replica was acknowledged")
	for i := 1; i < len(cl.Nodes); i++ {
		require.Equal(t, before[i]["wait"], after[i]["wait"], "a WAIT on %s, which has no replica", cl.Nodes[i].Addr)
	}

	replica.Pause()
	defer replica.Resume()
	blocked := make(chan error, 1)
	go func() {
		_, err := m.take(ctx, c, names[0], m.size)
		blocked <- err
	}()
	for i := 1; i < len(cl.Nodes); i++ {
		h, err := m.take(ctx, c, names[i], m.size)
		require.NoError(t, err, "a grant on %s while the other shard's replica is stopped", cl.Nodes[i].Addr)
		require.NoError(t, h.give(ctx))
	}
	err := withinBy(t, blocked, time.Now().Add(10*time.Second), "the grant on the stopped replica's shard did not return")
	require.ErrorIs(t, err, ErrNotObtained)
	require.ErrorIs(t, err, ErrNotReplicated)
	requireNothingHeld(ctx, t, c, m, names[0])
}

// With WithReplicaAcks(1, …), a grant on the shard with the replica is
// acknowledged, and one on a shard without replicas fails with
// ErrNotReplicated, leaving nothing held.
func testAcksWithoutShardReplicas(t *testing.T, cl *redistest.Cluster, m familyMember) {
	ctx := testCtx(t)
	c := clusterClient(t, cl.ClusterClient(), WithReplicaAcks(1, 200*time.Millisecond))
	names := namePerShard(t, cl, "explicit-"+m.kind+"-")
	h, err := m.take(ctx, c, names[0], m.size)
	require.NoError(t, err, "acknowledged by the shard's replica")
	require.NoError(t, h.give(ctx))
	for _, name := range names[1:] {
		_, err := m.take(ctx, c, name, m.size)
		require.ErrorIs(t, err, ErrNotObtained)
		require.ErrorIs(t, err, ErrNotReplicated)
		requireNothingHeld(ctx, t, c, m, name)
	}
}

// requireNothingHeld checks that m's resource name has no hold left: the
// plain lock's hash is gone, a shared resource has no lease.
func requireNothingHeld(ctx context.Context, t *testing.T, c *Client, m familyMember, name string) {
	t.Helper()
	held := func() bool { return c.rdb.ZCard(ctx, m.hashKey(name)+":leases").Val() > 0 }
	if m.kind == plainMember.kind {
		held = func() bool { return c.rdb.Exists(ctx, lockKey(name)).Val() > 0 }
	}
	require.Eventually(t, func() bool { return !held() }, fast, 5*time.Millisecond, "a hold of %s is left", name)
}
