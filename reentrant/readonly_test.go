package reentrant

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// A node that refuses writes fails a script at its first write: a replica
// (a demoted master that a client's connection still reaches after a
// failover), or a master short of min-replicas-to-write. A grant published
// before that write would reach a waiter listening on that node, which
// would then believe in a hold the master never had. Every script that
// grants must fail before it publishes.
func TestNoGrantIsPublishedWhereWritesAreRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	master := redistest.Start(t)
	replica := redistest.StartReplica(t, master)
	nodes := []struct {
		name   string
		node   *redistest.Server
		refuse func(t *testing.T) // makes the node refuse writes
		err    string
	}{
		{"replica", replica, func(*testing.T) {}, "READONLY"},
		{"master short of replicas", master, func(t *testing.T) {
			admin := master.Admin()
			require.NoError(t, admin.ConfigSet(ctx, "min-replicas-to-write", "2").Err())
			t.Cleanup(func() { _ = admin.ConfigSet(ctx, "min-replicas-to-write", "0").Err() })
		}, "NOREPLICAS"},
	}
	for _, n := range nodes {
		for _, m := range grantModes {
			for _, s := range freeingScripts {
				t.Run(n.name+"/"+m.name+"/"+s.name, func(t *testing.T) {
					l, err := m.ns.Keys(strings.ReplaceAll(t.Name(), "/", "-"))
					require.NoError(t, err)
					mdb, rdb := master.Client(), n.node.Client()
					a, err := l.AcquireNew(ctx, mdb, "A", testLease, Waiter{})
					require.NoError(t, err)
					sub, w := live(t, rdb, l, "w")
					queue(t, ctx, mdb, l, "W", w)
					if s.freed {
						require.NoError(t, master.Admin().Del(ctx, l.Hash).Err(), "A's lease ran out")
					}
					require.EqualValues(t, 1, master.Admin().Wait(ctx, 1, 5*time.Second).Val(), "the lock reached the replica")
					n.refuse(t)

					require.ErrorContains(t, s.run(ctx, rdb, l, a.Token), n.err)
					requireNothingPublished(t, ctx, rdb, l, sub, w)
					st, err := l.Inspect(ctx, mdb)
					require.NoError(t, err)
					if !s.freed {
						require.Equal(t, map[string]int64{"A": 1}, st.Holders, "A still holds the lock")
					}
					require.Equal(t, a.Token, st.LastToken, "no token was issued")
					require.Equal(t, []string{"w"}, queuedIDs(t, ctx, mdb, l), "the waiter is still queued")
				})
			}
		}
	}
}

// freeingScripts are the calls that find a lock free or leave it free, and
// so grant it to the oldest live waiter: run on l, which "A" held under
// token (or held until its lease ran out, when freed).
var freeingScripts = []struct {
	name  string
	freed bool
	run   func(ctx context.Context, rdb *redis.Client, l Keys, token uint64) error
}{
	{"release", false, func(ctx context.Context, rdb *redis.Client, l Keys, token uint64) error {
		_, err := l.Release(ctx, rdb, "A", token, "rel")
		return err
	}},
	{"force release", false, func(ctx context.Context, rdb *redis.Client, l Keys, _ uint64) error {
		_, err := l.ForceRelease(ctx, rdb, "force-readonly-1")
		return err
	}},
	{"look at a free lock", true, func(ctx context.Context, rdb *redis.Client, l Keys, _ uint64) error {
		_, err := l.AcquireNew(ctx, rdb, "B", testLease, Waiter{})
		return err
	}},
}

// requireNothingPublished checks that nothing was published to waiter w on
// the node of rdb, where sub listens: a message published there now is
// the first sub receives.
func requireNothingPublished(t *testing.T, ctx context.Context, rdb *redis.Client, l Keys, sub *redis.PubSub, w Waiter) {
	t.Helper()
	publish := rdb.Publish
	if l.publish == "spublish" {
		publish = rdb.SPublish
	}
	require.NoError(t, publish(ctx, w.Channel, "marker").Err())
	msg, err := sub.ReceiveMessage(ctx)
	require.NoError(t, err)
	require.Equal(t, "marker", msg.Payload, "a grant was published on a node that refused to write it")
}
