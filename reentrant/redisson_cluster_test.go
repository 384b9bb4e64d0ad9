package reentrant

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/notify/slot"
)

// TestRedissonOnCluster runs the Redisson wire format on a real three-master
// cluster. The subtests share it, because creating one takes seconds.
func TestRedissonOnCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cc := cl.ClusterClient()
	t.Run("ShardedOnEveryMaster", func(t *testing.T) { testRedissonSharded(ctx, t, cl, cc) })
	t.Run("PublishReachesEveryMaster", func(t *testing.T) { testRedissonPublish(ctx, t, cl, cc) })
	t.Run("CrossSlotNameFailsAsInJava", func(t *testing.T) { testRedissonCrossSlot(ctx, t, cc) })
	t.Run("RenewBatchIsPerSlot", func(t *testing.T) { testRedissonRenewSlots(ctx, t, cl, cc) })
}

// Every lock, its channel and its latches live in one slot, on the master
// that serves it, and SPUBLISH there reaches an SSUBSCRIBE made through the
// cluster client: the final unlock and forceUnlock publish, a partial
// unlock does not.
func testRedissonSharded(ctx context.Context, t *testing.T, cl *redistest.Cluster, cc *redis.ClusterClient) {
	a := mustField("client-a:1")
	for _, node := range cl.Nodes {
		tag := cl.TagOn(t, node, "lk")
		for _, name := range []string{tag, "{" + tag + "}lock", "lock{" + tag + "}"} {
			k, err := RedissonNamespace{Sharded: true}.Keys(name)
			require.NoError(t, err)
			s := slot.Of(k.Hash)
			require.Equal(t, s, slot.Of(k.Channel), name)
			require.Equal(t, s, slot.Of(k.LatchKey("r1")), name)
			require.Same(t, node, cl.Owner(t, s), name)

			sub := cc.SSubscribe(ctx, k.Channel)
			_, err = sub.Receive(ctx)
			require.NoError(t, err)
			next := func() string {
				ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				msg, err := sub.ReceiveMessage(ctx)
				require.NoError(t, err)
				return msg.Payload
			}

			for range 2 {
				_, err = k.Acquire(ctx, cc, a, "", time.Minute)
				require.NoError(t, err)
			}
			st, err := k.Unlock(ctx, cc, a, "r1", time.Minute)
			require.NoError(t, err)
			require.Equal(t, StillHeld, st)
			require.EqualValues(t, 1, node.Admin().Exists(ctx, k.LatchKey("r1")).Val(), "the latch is on the lock's master")
			require.NoError(t, cc.SPublish(ctx, k.Channel, "marker").Err())
			require.Equal(t, "marker", next(), "%s: a partial unlock publishes nothing", name)

			st, err = k.Unlock(ctx, cc, a, "r2", time.Minute)
			require.NoError(t, err)
			require.Equal(t, Released, st)
			require.Equal(t, RedissonUnlockMessage, next(), name)

			_, err = k.Acquire(ctx, cc, a, "", time.Minute)
			require.NoError(t, err)
			ok, err := k.ForceUnlock(ctx, cc)
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, RedissonUnlockMessage, next(), name)
			require.NoError(t, sub.Close())
		}
	}
}

// Where Redisson uses PUBLISH on a cluster (shardedSubscriptionMode OFF, or
// a server before Redis 7), the message reaches subscribers on every master.
func testRedissonPublish(ctx context.Context, t *testing.T, cl *redistest.Cluster, cc *redis.ClusterClient) {
	k, err := RedissonNamespace{}.Keys(cl.TagOn(t, cl.Nodes[0], "plain"))
	require.NoError(t, err)
	sub := cl.Nodes[1].Admin().Subscribe(ctx, k.Channel)
	t.Cleanup(func() { _ = sub.Close() })
	_, err = sub.Receive(ctx)
	require.NoError(t, err)

	a := mustField("client-a:1")
	_, err = k.Acquire(ctx, cc, a, "", time.Minute)
	require.NoError(t, err)
	_, err = k.Unlock(ctx, cc, a, "r1", time.Minute)
	require.NoError(t, err)
	msg, err := sub.ReceiveMessage(ctx)
	require.NoError(t, err)
	require.Equal(t, RedissonUnlockMessage, msg.Payload)
}

// A name whose channel is in another slot (here "lock{": no hash tag, so
// the lock and its channel hash whole) breaks Redisson's own unlock on a
// cluster; PUBLISH mode (which Keys accepts, for a single node) fails the
// same way, with nothing changed.
func testRedissonCrossSlot(ctx context.Context, t *testing.T, cc *redis.ClusterClient) {
	const name = "lock{"
	k, err := RedissonNamespace{}.Keys(name)
	require.NoError(t, err)
	a := mustField("client-a:1")
	_, err = k.Acquire(ctx, cc, a, "", time.Minute)
	require.NoError(t, err, "one key: works")

	_, err = k.Unlock(ctx, cc, a, "r1", time.Minute)
	require.ErrorContains(t, err, "CROSSSLOT")
	_, err = cc.Eval(ctx, javaUnlockLua, []string{name, RedissonPrefixName(RedissonLockChannelPrefix, name),
		RedissonPrefixName(RedissonUnlockLatchPrefix, name) + ":r1"}, 0, 60000, a.String(), "PUBLISH", latchMs).Result()
	require.ErrorContains(t, err, "CROSSSLOT", "Redisson's own unlock")
	require.Equal(t, "1", cc.HGet(ctx, name, a.String()).Val())
}

// Redisson's batched renewal takes the locks of one slot at a time, and so
// must the caller of RedissonRenewBatch on a cluster.
func testRedissonRenewSlots(ctx context.Context, t *testing.T, cl *redistest.Cluster, cc *redis.ClusterClient) {
	a := mustField("client-a:1")
	tag0, tag1 := cl.TagOn(t, cl.Nodes[0], "rn"), cl.TagOn(t, cl.Nodes[1], "rn")
	var holds []RedissonHold
	for _, name := range []string{"{" + tag0 + "}a", "{" + tag0 + "}b", tag1} {
		k, err := RedissonNamespace{Sharded: true}.Keys(name)
		require.NoError(t, err)
		_, err = k.Acquire(ctx, cc, a, "", time.Minute)
		require.NoError(t, err)
		holds = append(holds, RedissonHold{Keys: k, Field: a})
	}
	renewed, err := RedissonRenewBatch(ctx, cc, holds[:2], 2*time.Minute)
	require.NoError(t, err)
	require.Equal(t, []bool{true, true}, renewed)
	require.Greater(t, cc.PTTL(ctx, holds[1].Keys.Hash).Val(), time.Minute)

	_, err = RedissonRenewBatch(ctx, cc, holds[1:], 2*time.Minute)
	require.ErrorContains(t, err, "CROSSSLOT")
}
