package reentrant

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// setupShared starts a server and derives the keys of kind's resource
// name; a semaphore's handle size is size.
func setupShared(t *testing.T, kind Kind, name string, size int64) (context.Context, *redis.Client, SharedKeys) {
	t.Helper()
	ctx, rdb, _ := setup(t, name)
	return ctx, rdb, sharedKeys(t, Namespace{}, kind, name, size)
}

// sharedKeys derives the keys of kind's resource name in ns, with the
// handle size size for a semaphore.
func sharedKeys(t *testing.T, ns Namespace, kind Kind, name string, size int64) SharedKeys {
	t.Helper()
	k, err := ns.SharedKeys(kind, name)
	require.NoError(t, err)
	if kind == KindSemaphore {
		k, err = k.WithSize(size)
		require.NoError(t, err)
	}
	return k
}

// rw is a read-write lock's two modes.
func rw(t *testing.T, k SharedKeys) (read, write SharedMode) {
	t.Helper()
	read, err := k.Read()
	require.NoError(t, err)
	write, err = k.Write()
	require.NoError(t, err)
	return read, write
}

// permits is the mode of n permits of semaphore k.
func permits(t *testing.T, k SharedKeys, n int64) SharedMode {
	t.Helper()
	s, err := k.Permits(n)
	require.NoError(t, err)
	return s
}

// client is one client's grant line: its subscription, and the waiters
// it makes on it.
type client struct {
	name string
	sub  *redis.PubSub
	k    SharedKeys
}

// newClient subscribes client name's grant channel for k, as k's
// namespace wants it.
func newClient(t *testing.T, rdb *redis.Client, k SharedKeys, name string) *client {
	t.Helper()
	ch := k.GrantChannel(name)
	sub := rdb.Subscribe(context.Background(), ch)
	if k.lock.publish == "spublish" {
		require.NoError(t, sub.Close())
		sub = rdb.SSubscribe(context.Background(), ch)
	}
	t.Cleanup(func() { _ = sub.Close() })
	_, err := sub.Receive(context.Background())
	require.NoError(t, err)
	return &client{name: name, sub: sub, k: k}
}

// waiter is waiter id of c.
func (c *client) waiter(id string) Waiter { return c.k.Waiter(id, c.name) }

// enqueue queues owner (an owner made for the call) for s as waiter w of
// c, and checks that it waits.
func (c *client) enqueue(t *testing.T, ctx context.Context, rdb *redis.Client, s SharedMode, owner string, w Waiter) {
	t.Helper()
	r, err := s.AcquireNew(ctx, rdb, owner, testLease, w)
	require.NoError(t, err)
	require.False(t, r.Acquired, "%s waits", owner)
}

// grants receives one message on c and returns its grants.
func (c *client) grants(t *testing.T) []Grant {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	msg, err := c.sub.ReceiveMessage(ctx)
	require.NoError(t, err)
	gs, err := ParseGrants(msg.Payload)
	require.NoError(t, err)
	return gs
}

// requireNoMessage checks that nothing was published to c so far: a
// message published now is the first c receives.
func (c *client) requireNoMessage(t *testing.T, ctx context.Context, rdb *redis.Client) {
	t.Helper()
	ch, publish := c.k.GrantChannel(c.name), rdb.Publish
	if c.k.lock.publish == "spublish" {
		publish = rdb.SPublish
	}
	require.NoError(t, publish(ctx, ch, "marker").Err())
	msg, err := c.sub.ReceiveMessage(ctx)
	require.NoError(t, err)
	require.Equal(t, "marker", msg.Payload, "nothing was published to %s", c.name)
}

// holds reads k's holds as "<mode>:<owner>" → count.
func holds(t *testing.T, ctx context.Context, rdb *redis.Client, k SharedKeys) map[string]int64 {
	t.Helper()
	st, err := k.Inspect(ctx, rdb)
	require.NoError(t, err)
	m := map[string]int64{}
	for _, h := range st.Holds {
		m[string(h.Mode)+":"+h.Owner] = h.Count
	}
	return m
}

// queued lists the IDs of k's queued waiters, oldest first.
func queued(t *testing.T, ctx context.Context, rdb *redis.Client, k SharedKeys) []string {
	t.Helper()
	recs, err := rdb.LRange(ctx, k.Queue, 0, -1).Result()
	require.NoError(t, err)
	ids := []string{}
	for _, rec := range recs {
		ids = append(ids, strings.Fields(rec)[2])
	}
	return ids
}

// requireOnlyExpiringKeys checks that what is left in Redis is keys that
// expire on their own: request keys, the fencing counter and a
// semaphore's size.
func requireOnlyExpiringKeys(t *testing.T, ctx context.Context, rdb *redis.Client, k SharedKeys) {
	t.Helper()
	keys, err := rdb.Keys(ctx, "*").Result()
	require.NoError(t, err)
	for _, key := range keys {
		require.True(t, key == k.Fence || key == k.HoldIDs || key == k.Size || strings.HasPrefix(key, k.RequestKey("")),
			"only request keys, the counters and the size are left: %s", key)
		ttl := rdb.PTTL(ctx, key).Val()
		require.True(t, ttl > 0 || ttl == -2, "%s expires (PTTL %v; -2: it has since KEYS)", key, ttl)
	}
}

// ids names n waiters with prefix.
func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}
