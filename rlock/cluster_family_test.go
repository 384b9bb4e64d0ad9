package rlock

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/notify/slot"
	"github.com/batonlock/baton/reentrant"
)

// familyMember is one kind of the lock family as the cluster tests drive
// it, so that each test runs for every kind. A kind whose holds can be
// shared (shares) takes a shared hold when asked; the others take every
// hold exclusive. (The semaphore joins with a member of its own: size 2,
// a permit shared, both exclusive.)
type familyMember struct {
	kind   string
	shares bool
	// take takes a hold of name for c and returns its release.
	take func(ctx context.Context, c *Client, name string, shared bool) (release func(context.Context) error, err error)
	// keys are the keys of name that its scripts touch, but for request
	// records and liveness keys, which are per call and per client: its
	// holds' key first, its waiters' queue last.
	keys func(t *testing.T, c *Client, name string) []string
	// force ends every hold of name, whoever holds it.
	force func(ctx context.Context, c *Client, name string) error
}

// queue is the key of the waiters of name.
func (m familyMember) queue(t *testing.T, c *Client, name string) string {
	keys := m.keys(t, c, name)
	return keys[len(keys)-1]
}

// plainMember is the plain lock: every hold exclusive.
var plainMember = familyMember{
	kind: "lock",
	take: func(ctx context.Context, c *Client, name string, _ bool) (func(context.Context) error, error) {
		l, err := c.Lock(ctx, name)
		if err != nil {
			return nil, err
		}
		return l.Unlock, nil
	},
	keys: func(t *testing.T, c *Client, name string) []string {
		k, err := c.lockKeys(name)
		require.NoError(t, err)
		return []string{k.Hash, k.Fence, k.Granted, k.Queue}
	},
	force: func(ctx context.Context, c *Client, name string) error {
		_, err := c.ForceUnlock(ctx, name)
		return err
	},
}

// rwMember is the RW lock: a shared hold is a read, an exclusive one the
// write.
var rwMember = familyMember{
	kind:   "rw",
	shares: true,
	take: func(ctx context.Context, c *Client, name string, shared bool) (func(context.Context) error, error) {
		take := c.RWLock(name).Lock
		if shared {
			take = c.RWLock(name).RLock
		}
		l, err := take(ctx)
		if err != nil {
			return nil, err
		}
		return l.Unlock, nil
	},
	keys: func(t *testing.T, c *Client, name string) []string {
		k, err := c.ns.SharedKeys(reentrant.KindRW, name)
		require.NoError(t, err)
		return []string{k.Hash, k.Leases, k.Fence, k.Queue}
	},
	force: func(ctx context.Context, c *Client, name string) error {
		_, err := c.RWLock(name).ForceUnlock(ctx)
		return err
	},
}

// A member's every script stays in its name's slot on each shard: a hold,
// a queued waiter of each mode granted by the release, a forced release.
// Every key the scripts wrote, and each client's grant channel, hashes to
// the name's slot (CLUSTER KEYSLOT on the node that serves it), the grants
// go out by SPUBLISH on the name's own shard, and nothing by PUBLISH.
func testFamilySingleSlot(t *testing.T, cl *redistest.Cluster, m familyMember) {
	ctx := testCtx(t)
	c, other := clusterClient(t, cl.ClusterClient()), clusterClient(t, cl.ClusterClient())
	before := readStats(t, cl)
	for _, name := range namePerShard(t, cl, "slot-"+m.kind+"-") {
		home := cl.Owner(t, slot.Of(name))
		release, err := m.take(ctx, c, name, false)
		require.NoError(t, err)
		var waiters sync.WaitGroup
		for i, shared := range []bool{false, m.shares} {
			waiters.Go(func() {
				if give, err := m.take(ctx, other, name, shared); assertNoError(t, err) {
					assertNoError(t, give(ctx))
				}
			})
			require.Eventually(t, func() bool { return home.Admin().LLen(ctx, m.queue(t, c, name)).Val() == int64(i+1) },
				5*time.Second, time.Millisecond)
		}
		touched := home.Admin().Keys(ctx, "*{"+name+"}*").Val() // the request and liveness records too
		require.NoError(t, release(ctx))
		waiters.Wait()
		_, err = m.take(ctx, c, name, false)
		require.NoError(t, err)
		require.NoError(t, m.force(ctx, other, name))
		touched = append(touched, home.Admin().Keys(ctx, "*{"+name+"}*").Val()...)
		touched = append(touched, m.keys(t, c, name)...)
		for _, cc := range []*Client{c, other} {
			touched = append(touched, lockKey(name)+":grant:"+cc.id)
		}
		for _, key := range touched {
			got, err := home.Admin().ClusterKeySlot(ctx, key).Result()
			require.NoError(t, err)
			require.EqualValues(t, slot.Of(name), got, "%s is in another slot than %s", key, name)
		}
		requireOnlyFence(t, home.Admin(), name)
	}
	for i, after := range readStats(t, cl) {
		d := after.Sub(before[i])
		addr := cl.Nodes[i].Addr
		require.Positive(t, d["evalsha"]+d["eval"], "node %s ran scripts: the names spread over every shard", addr)
		require.Positive(t, d["spublish"], "node %s published its own grants", addr)
		require.Zero(t, d["publish"], "sharded mode never broadcasts")
	}
}

// A release of an exclusive hold admits every shared waiter queued behind
// it at once, in one message per waiting client (k waiters on two
// clients: two SPUBLISHes on the name's shard, no PUBLISH): all k hold
// before any gives its hold up.
func testBatchGrant(t *testing.T, cl *redistest.Cluster, m familyMember) {
	ctx := testCtx(t)
	home := cl.Nodes[1]
	name := cl.TagOn(t, home, "batch-"+m.kind+"-")
	holder := clusterClient(t, cl.ClusterClient())
	waiters := []*Client{clusterClient(t, cl.ClusterClient()), clusterClient(t, cl.ClusterClient())}
	release, err := m.take(ctx, holder, name, false)
	require.NoError(t, err)
	const k = 10
	gives := make(chan func(context.Context) error, k)
	var got sync.WaitGroup
	for i := range k {
		got.Go(func() {
			if give, err := m.take(ctx, waiters[i%2], name, true); assertNoError(t, err) {
				gives <- give
			}
		})
	}
	queue := m.queue(t, holder, name)
	require.Eventually(t, func() bool { return home.Admin().LLen(ctx, queue).Val() == k }, 5*time.Second, time.Millisecond)
	before, err := redistest.ReadCommandStats(ctx, home.Admin())
	require.NoError(t, err)
	require.NoError(t, release(ctx))
	got.Wait() // every waiter holds, and none has given its hold up
	after, err := redistest.ReadCommandStats(ctx, home.Admin())
	require.NoError(t, err)
	d := after.Sub(before)
	t.Logf("the release of %s admitting %d: %v", m.kind, k, d)
	require.EqualValues(t, 2, d["spublish"], "one grant message per waiting client")
	require.Zero(t, d["publish"])
	close(gives)
	require.Len(t, gives, k)
	for give := range gives {
		require.NoError(t, give(ctx))
	}
	requireOnlyFence(t, home.Admin(), name)
}

// aclUser makes user, with ACLClusterRules, on every node, and returns the
// option that dials as it; at the end of the test no node may have denied
// it anything.
func aclUser(t *testing.T, cl *redistest.Cluster, user string) func(*redis.ClusterOptions) {
	t.Helper()
	ctx := testCtx(t)
	args := append([]string{"reset", "on", ">" + aclPassword}, strings.Fields(ACLClusterRules)...)
	for _, n := range cl.Nodes {
		require.NoError(t, n.Admin().ACLSetUser(ctx, user, args...).Err())
	}
	t.Cleanup(func() {
		for _, n := range cl.Nodes {
			entries, err := n.Admin().ACLLog(context.Background(), 1024).Result()
			require.NoError(t, err)
			for _, e := range entries {
				require.NotEqual(t, user, e.Username, "denied %s on %s", e.Object, n.Addr)
			}
		}
	})
	return func(o *redis.ClusterOptions) { o.Username, o.Password = user, aclPassword }
}
