package rlock

import (
	"context"
	"fmt"
	"slices"
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

// familyMember is one of the lock, the RW lock and the semaphore as the cluster tests and the
// multi-process checker (runFamily) drive it, so that each test runs for
// every kind. Its holds weigh 1 to size: a
// hold of weight size is exclusive; a member whose size is above 1 has
// holds that share it.
type familyMember struct {
	kind string
	size int64
	// take takes a hold of name of weight (1 or size, or for a semaphore
	// any number of permits up to it) for c, with opts.
	take func(ctx context.Context, c *Client, name string, weight int64, opts ...LockOption) (taken, error)
	// keys are the keys of name that its scripts touch, but for request
	// records and liveness keys, which are per call and per client: its
	// holds' key first, its waiters' queue last.
	keys func(t *testing.T, c *Client, name string) []string
	// force ends every hold of name, whoever holds it.
	force func(ctx context.Context, c *Client, name string) error
	// readsShareToken: holds of weight 1 take the token of the last
	// exclusive grant (an RW lock's reads), instead of a token of their
	// own.
	readsShareToken bool
	// order is what testOrderAcrossSlotMigration asks for: the weight
	// held first, then those queued behind it, in turn.
	order []int64

	// ops are the operations a worker of the multi-process checker
	// (runFamily, runFailovers) draws from at random, on the resource
	// called name of c; a member weights an operation by listing it more
	// than once.
	ops func(c *Client, name string) []familyOp
	// look takes the whole resource once and gives it back: it waits out
	// any hold a dead child left, and drops the queue entries of dead
	// waiters before it. The plain lock, which runFamily does not run,
	// has none.
	look func(ctx context.Context, c *Client, name string) error
}

// taken is a hold a familyMember took.
type taken struct {
	give  func(context.Context) error
	token uint64
	owner string
	ctx   context.Context // the handle's Context
}

// lockTaken is l as taken, or err.
func lockTaken(l *Lock, err error) (taken, error) {
	if err != nil {
		return taken{}, err
	}
	return taken{give: l.Unlock, token: l.Token(), owner: l.Owner(), ctx: l.Context()}, nil
}

// queue is the key of the waiters of name.
func (m familyMember) queue(t *testing.T, c *Client, name string) string {
	keys := m.keys(t, c, name)
	return keys[len(keys)-1]
}

// hashKey is the hash key of m's resource called name under the default
// prefix, for a member that shares (not the plain lock, whose hash is
// lockKey's); its leases, queue and fence are this key with a suffix.
func (m familyMember) hashKey(name string) string { return lockKey(name) + ":" + m.kind }

// plainMember is the plain lock: every hold exclusive.
var plainMember = familyMember{
	kind: "lock",
	size: 1,
	ops:  lockFamilyOps,
	take: func(ctx context.Context, c *Client, name string, _ int64, opts ...LockOption) (taken, error) {
		return lockTaken(c.Lock(ctx, name, opts...))
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
	order: []int64{1, 1, 1, 1},
}

// rwMember is the RW lock: a hold of weight 1 is a read, the exclusive one
// the write.
var rwMember = familyMember{
	kind:            "rw",
	size:            reentrant.WriteWeight,
	readsShareToken: true,
	ops:             rwFamilyOps,
	look:            rwLook,
	take: func(ctx context.Context, c *Client, name string, weight int64, opts ...LockOption) (taken, error) {
		take := c.RWLock(name).Lock
		if weight == 1 {
			take = c.RWLock(name).RLock
		}
		return lockTaken(take(ctx, opts...))
	},
	keys: func(t *testing.T, c *Client, name string) []string {
		return sharedKeyNames(t, c, reentrant.KindRW, name)
	},
	force: func(ctx context.Context, c *Client, name string) error {
		_, err := c.RWLock(name).ForceUnlock(ctx)
		return err
	},
	order: []int64{reentrant.WriteWeight, reentrant.WriteWeight, reentrant.WriteWeight, reentrant.WriteWeight, 1, 1, 1,
		reentrant.WriteWeight},
}

// semSize is the size of semMember's semaphores.
const semSize = 4

// semMember is the semaphore of semSize permits: a hold takes the permits
// of its weight. Its order test holds 2 and queues a head asking 3 before
// asks for 1, which fit but must not overtake it.
var semMember = familyMember{
	kind: "sem",
	size: semSize,
	ops:  semFamilyOps,
	look: semLook,
	take: func(ctx context.Context, c *Client, name string, weight int64, opts ...LockOption) (taken, error) {
		p, err := c.Semaphore(name, semSize).Acquire(ctx, weight, opts...)
		if err != nil {
			return taken{}, err
		}
		return taken{give: p.Release, token: p.Token(), owner: p.Owner(), ctx: p.Context()}, nil
	},
	keys: func(t *testing.T, c *Client, name string) []string {
		return sharedKeyNames(t, c, reentrant.KindSemaphore, name)
	},
	force: func(ctx context.Context, c *Client, name string) error {
		_, err := c.Semaphore(name, semSize).ForceRelease(ctx)
		return err
	},
	order: []int64{2, 3, 1, 1, semSize, 1, 2},
}

// sharedKeyNames are the keys of the shared resource of kind called
// name, in familyMember.keys's order.
func sharedKeyNames(t *testing.T, c *Client, kind reentrant.Kind, name string) []string {
	t.Helper()
	k, err := c.ns.SharedKeys(kind, name)
	require.NoError(t, err)
	return slices.DeleteFunc([]string{k.Hash, k.Leases, k.Fence, k.Size, k.Queue}, func(s string) bool { return s == "" })
}

// A member's every script stays in its name's slot on each shard: a hold,
// a queued waiter of each weight granted by the release, a forced release.
// Every key the scripts wrote (with classic PUBLISH, the waiters' liveness
// keys too), and each client's grant channel, hashes to the name's slot
// (CLUSTER KEYSLOT on the node that serves it), and the grants go out on
// the name's own shard, by publish ("publish" or "spublish") only.
func testFamilySingleSlot(t *testing.T, cl *redistest.Cluster, m familyMember, publish string, opts ...Option) {
	ctx := testCtx(t)
	c, other := clusterClient(t, cl.ClusterClient(), opts...), clusterClient(t, cl.ClusterClient(), opts...)
	before := readStats(t, cl)
	for _, name := range namePerShard(t, cl, "slot-"+m.kind+"-"+publish+"-") {
		home := cl.Owner(t, slot.Of(name))
		held, err := m.take(ctx, c, name, m.size)
		require.NoError(t, err)
		var waiters sync.WaitGroup
		for i, weight := range []int64{m.size, 1} {
			waiters.Go(func() {
				if h, err := m.take(ctx, other, name, weight); assertNoError(t, err) {
					assertNoError(t, h.give(ctx))
				}
			})
			require.Eventually(t, func() bool { return home.Admin().LLen(ctx, m.queue(t, c, name)).Val() == int64(i+1) },
				5*time.Second, time.Millisecond)
		}
		touched := home.Admin().Keys(ctx, "*{"+name+"}*").Val() // the request and liveness records too
		alive := slices.ContainsFunc(touched, func(k string) bool { return strings.Contains(k, ":alive:") })
		require.Equal(t, publish == "publish", alive, "liveness keys where PUBLISH cannot count receivers: %v", touched)
		require.NoError(t, held.give(ctx))
		waiters.Wait()
		_, err = m.take(ctx, c, name, m.size)
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
	requirePublishedWith(t, cl, before, publish)
}

// A release of an exclusive hold admits every shared waiter queued behind
// it at once, in one message per waiting client (k waiters on two
// clients: two SPUBLISHes on the name's shard, no PUBLISH): all k hold
// before any gives its hold up, and the release had granted them all
// before it returned. With raise, the holder keeps its hold and raise
// admits them instead (a semaphore's SetSize), as at once.
func testBatchGrant(t *testing.T, cl *redistest.Cluster, m familyMember, raise func(context.Context, *Client, string, int64) error) {
	ctx := testCtx(t)
	home := cl.Nodes[1]
	name := cl.TagOn(t, home, fmt.Sprintf("batch-%s-%t-", m.kind, raise != nil))
	holder := clusterClient(t, cl.ClusterClient())
	waiters := []*Client{clusterClient(t, cl.ClusterClient()), clusterClient(t, cl.ClusterClient())}
	held, err := m.take(ctx, holder, name, m.size)
	require.NoError(t, err)
	k := min(10, m.size)
	gives := make(chan func(context.Context) error, k+1)
	var got sync.WaitGroup
	for i := range k {
		got.Go(func() {
			if h, err := m.take(ctx, waiters[i%2], name, 1); assertNoError(t, err) {
				gives <- h.give
			}
		})
	}
	queue := m.queue(t, holder, name)
	require.Eventually(t, func() bool { return home.Admin().LLen(ctx, queue).Val() == k }, 5*time.Second, time.Millisecond)
	before, err := redistest.ReadCommandStats(ctx, home.Admin())
	require.NoError(t, err)
	holds := k
	if raise != nil {
		require.NoError(t, raise(ctx, holder, name, m.size+k))
		gives <- held.give
		holds++
	} else {
		require.NoError(t, held.give(ctx))
	}
	require.Zero(t, home.Admin().LLen(ctx, queue).Val(), "granted them all before it returned")
	got.Wait() // every waiter holds, and none has given its hold up
	after, err := redistest.ReadCommandStats(ctx, home.Admin())
	require.NoError(t, err)
	d := after.Sub(before)
	t.Logf("admitting %d of %s: %v", k, m.kind, d)
	require.EqualValues(t, 2, d["spublish"], "one grant message per waiting client")
	require.Zero(t, d["publish"])
	close(gives)
	require.Len(t, gives, int(holds))
	for give := range gives {
		require.NoError(t, give(ctx))
	}
	requireOnlyFence(t, home.Admin(), name)
}

// setSize raises name's size to n, as testBatchGrant's raise.
func setSize(ctx context.Context, c *Client, name string, n int64) error {
	return c.Semaphore(name, semSize).SetSize(ctx, n)
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
