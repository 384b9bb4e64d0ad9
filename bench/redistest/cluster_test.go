package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/notify/slot"
)

func TestCluster(t *testing.T) {
	cl := StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ids := map[string]bool{}
	for _, n := range cl.Nodes {
		require.NotEmpty(t, n.ID)
		ids[n.ID] = true
	}
	require.Len(t, ids, 3, "distinct node IDs")

	// KeySlot is what the server computes, hash tags included.
	for _, key := range []string{"123456789", "{user1000}.following", "foo{}{bar}", "{}x", "a{b}c", "x{", ""} {
		want, err := cl.Nodes[0].Admin().ClusterKeySlot(ctx, key).Result()
		require.NoError(t, err)
		require.EqualValues(t, want, slot.Of(key), "%q", key)
	}

	// The cluster client writes each key on the node TagOn picked for it.
	rdb := cl.ClusterClient()
	for _, n := range cl.Nodes {
		key := "{" + cl.TagOn(t, n, "k") + "}"
		require.NoError(t, rdb.Set(ctx, key, n.Addr, 0).Err())
		got, err := n.Admin().Get(ctx, key).Result()
		require.NoError(t, err, "the key is on %s itself", n.Addr)
		require.Equal(t, n.Addr, got)
	}

	// MigrateSlot moves the slot and its keys, TTL included.
	from, to := cl.Nodes[0], cl.Nodes[1]
	tag := cl.TagOn(t, from, "m")
	slot := slot.Of(tag)
	for _, k := range []string{"{" + tag + "}a", "{" + tag + "}b"} {
		require.NoError(t, rdb.Set(ctx, k, "v", time.Minute).Err())
	}
	cl.MigrateSlot(t, slot, to)
	require.Same(t, to, cl.Owner(t, slot))
	n, err := to.Admin().Exists(ctx, "{"+tag+"}a", "{"+tag+"}b").Result()
	require.NoError(t, err)
	require.EqualValues(t, 2, n, "the keys moved")
	require.Positive(t, to.Admin().PTTL(ctx, "{"+tag+"}a").Val(), "with their TTL")
	require.ErrorContains(t, from.Admin().Get(ctx, "{"+tag+"}a").Err(), "MOVED", "the source redirects")
	got, err := rdb.Get(ctx, "{"+tag+"}b").Result()
	require.NoError(t, err, "the cluster client follows the redirect")
	require.Equal(t, "v", got)
}

// AddReplica gives one master a replica: a write in that master's slots is
// acknowledged (WAIT) and on the replica; the other masters still have none.
func TestClusterAddReplica(t *testing.T) {
	cl := StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	replica := cl.AddReplica(t, cl.Nodes[0])
	require.NotEmpty(t, replica.ID)
	reader := replica.Server.Admin(func(o *redis.Options) { // a cluster replica serves reads after READONLY
		o.OnConnect = func(ctx context.Context, cn *redis.Conn) error { return cn.ReadOnly(ctx).Err() }
	})
	for i, n := range cl.Nodes {
		key := "{" + cl.TagOn(t, n, "r") + "}"
		require.NoError(t, n.Admin().Set(ctx, key, "v", 0).Err())
		// WAIT returns at the acknowledgement, so the replica's master may
		// wait long (a loaded CI machine took over 100 ms); a master with
		// no replica answers 0 at the timeout, which may be short.
		within := 100 * time.Millisecond
		if i == 0 {
			within = 5 * time.Second
		}
		acked, err := n.Admin().Wait(ctx, 1, within).Result()
		require.NoError(t, err)
		if i == 0 {
			require.EqualValues(t, 1, acked, "the replica acknowledges its master's write")
			// The replica has the write (WAIT); whether it serves the read
			// also rests on its own cluster view, which gossip brings.
			deadline := time.Now().Add(5 * time.Second)
			for got := reader.Get(ctx, key); got.Val() != "v"; got = reader.Get(ctx, key) {
				if time.Now().After(deadline) {
					t.Fatalf("the replica does not serve the write: %v", got)
				}
				time.Sleep(10 * time.Millisecond)
			}
		} else {
			require.Zero(t, acked, "%s has no replica", n.Addr)
		}
	}
}
