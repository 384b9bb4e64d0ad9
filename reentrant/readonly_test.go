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
// failover), or a master short of min-replicas-to-write; a replica that
// takes writes (replica-read-only no) fails it at its check of the role. A grant published
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
		{"replica that takes writes", replica, func(t *testing.T) { writable(t, ctx, replica) }, "READONLY"},
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

// replicated starts a master and a replica that has synced with it, with a
// ctx bounded like the test.
func replicated(t *testing.T) (context.Context, *redistest.Server, *redistest.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	master := redistest.Start(t)
	return ctx, master, redistest.StartReplica(t, master)
}

// writable makes replica take writes (replica-read-only no) until the test
// ends.
func writable(t *testing.T, ctx context.Context, replica *redistest.Server) {
	t.Helper()
	admin := replica.Admin()
	require.NoError(t, admin.ConfigSet(ctx, "replica-read-only", "no").Err())
	t.Cleanup(func() { _ = admin.ConfigSet(context.Background(), "replica-read-only", "yes").Err() })
}

// A replica that takes writes (replica-read-only no) runs every script, so
// every script that takes or renews a hold asks the role first: none takes
// or renews a hold there, in any format, and none writes anything.
func TestNothingIsTakenOrRenewedOnAReplicaThatTakesWrites(t *testing.T) {
	ctx, master, replica := replicated(t)
	mdb, rdb := master.Client(), replica.Client()
	l, err := Namespace{}.Keys("writable")
	require.NoError(t, err)
	held, err := l.AcquireNew(ctx, mdb, "H", testLease, Waiter{})
	require.NoError(t, err)
	k := sharedKeys(t, Namespace{}, KindSemaphore, "writable", 2)
	p := permits(t, k, 1)
	ph, err := p.AcquireNew(ctx, mdb, "P", testLease, Waiter{})
	require.NoError(t, err)
	wk, err := RedissonNamespace{}.Keys("writable")
	require.NoError(t, err)
	field, err := NewRedissonField("c", "1")
	require.NoError(t, err)
	other, err := NewRedissonField("c", "2")
	require.NoError(t, err)
	_, err = wk.Acquire(ctx, mdb, field, "", testLease)
	require.NoError(t, err)
	require.EqualValues(t, 1, master.Admin().Wait(ctx, 1, 5*time.Second).Val(), "the holds reached the replica")
	writable(t, ctx, replica)

	for name, run := range map[string]func() error{
		"acquire": func() error { _, err := l.AcquireNew(ctx, rdb, "B", testLease, Waiter{}); return err },
		"acquire permits": func() error {
			_, err := p.AcquireNew(ctx, rdb, "Q", testLease, Waiter{})
			return err
		},
		"renew":         func() error { _, err := l.Renew(ctx, rdb, "H", held.Token, 2*testLease); return err },
		"renew permits": func() error { _, err := p.Renew(ctx, rdb, "P", ph.Token, 2*testLease); return err },
		"wire acquire":  func() error { _, err := wk.Acquire(ctx, rdb, other, "", testLease); return err },
		"wire renew":    func() error { _, err := wk.Renew(ctx, rdb, field, 2*testLease); return err },
	} {
		require.ErrorContains(t, run(), "READONLY", name)
	}
	ttl, err := replica.Admin().PTTL(ctx, l.Hash).Result()
	require.NoError(t, err)
	require.LessOrEqual(t, ttl, testLease, "no lease was renewed")
}
