package rlock

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// A Sentinel deployment through redis.NewFailoverClient: Lock, Unlock, a
// wait ended by a grant over pub/sub, and a failover mid-hold.
//
// The failover is made deterministic: the lock's keys have reached the
// replica (WAIT) before it is promoted, so the new master has the hold with
// its lease and token, the holder's renewals go on there, and it keeps the
// lock. (A failover that loses the last writes would lose the lock instead;
// the holder's Context would then end with ErrLockLost, and fencing tokens,
// drawn from the server clock, would still rise.)
func TestSentinel(t *testing.T) {
	ctx := testCtx(t)
	s := redistest.StartSentinel(t)
	const lease = 5 * time.Second // longer than the switch-over takes
	holder, err := New(s.FailoverClient(), WithWatchdogLease(lease))
	require.NoError(t, err)
	t.Cleanup(func() { _ = holder.Close() })
	waiter, err := New(s.FailoverClient())
	require.NoError(t, err)
	t.Cleanup(func() { _ = waiter.Close() })

	l, err := holder.Lock(ctx, "sentinel")
	require.NoError(t, err)
	got := lockInBackground(ctx, waiter, "sentinel")
	require.Eventually(t, func() bool { return s.Master.Admin().LLen(ctx, lockKey("sentinel")+":queue").Val() == 1 },
		5*time.Second, 2*time.Millisecond, "the waiter queues through the failover client")
	require.NoError(t, l.Unlock(ctx))
	w := receive(t, got)
	require.Greater(t, w.Token(), l.Token())
	require.NoError(t, w.Unlock(ctx))

	held, err := holder.Lock(ctx, "held-across")
	require.NoError(t, err)
	// A precondition, not a speed: WAIT returns once the replica has the
	// hold. A loaded machine has delayed that past 1 s (a helper's full
	// run), so it may take up to the lease, which the failover must fit
	// in anyway.
	require.EqualValues(t, 1, s.Master.Admin().Wait(ctx, 1, lease).Val(), "the hold reached the replica")
	s.Failover()
	time.Sleep(lease / 2) // renewals on the new master
	require.NoError(t, held.Context().Err(), "the holder lost the lock in a failover that kept it")
	st, err := s.Master.Admin().HGetAll(ctx, lockKey("held-across")).Result()
	require.NoError(t, err)
	require.Equal(t, map[string]string{held.Owner(): "1"}, st, "the new master has the hold")
	_, err = waiter.TryLock(ctx, "held-across")
	require.ErrorIs(t, err, ErrNotObtained, "the new master excludes")
	require.NoError(t, held.Unlock(ctx))

	after, err := waiter.Lock(ctx, "held-across")
	require.NoError(t, err)
	require.Greater(t, after.Token(), held.Token(), "tokens rise across the failover")
	require.NoError(t, after.Unlock(ctx))
	counterRun(t, ctx, s.Master.Admin(), []*Client{holder, waiter}, "after-failover", 4, 200)
}

// redis.NewFailoverClusterClient is a *redis.ClusterClient over a Sentinel
// deployment: one slot range, served by the master and its replicas. Its
// pub/sub connection may be on a replica (ReplicaOnly, RouteByLatency,
// RouteRandomly) or, after a failover, on the demoted master, where the new
// master's messages arrive by replication but are not counted. The attack:
// a waiter queued through it, a failover, and a release on the new master.
// A grant that counted nobody still reaches the waiter; had the release
// judged the waiter dead by that count and freed the lock, the waiter and
// the next taker would both hold it.
func TestFailoverClusterClientNeverTrustsTheCount(t *testing.T) {
	ctx := testCtx(t)
	s := redistest.StartSentinel(t)
	// A liveness TTL longer than the failover takes: the waiter's key, set
	// on the old master and replicated, still lives when the release runs.
	const aliveTTL = 10 * time.Second
	holderRdb, waiterRdb := s.FailoverClusterClient(), s.FailoverClusterClient()
	holder := sentinelClient(t, holderRdb, WithLivenessTTL(aliveTTL))
	waiter := sentinelClient(t, waiterRdb, WithLivenessTTL(aliveTTL))

	h, err := holder.Lock(ctx, "demoted", WithLease(longLease))
	require.NoError(t, err)
	got := lockInBackground(ctx, waiter, "demoted")
	require.Eventually(t, func() bool { return s.Master.Admin().LLen(ctx, lockKey("demoted")+":queue").Val() == 1 },
		5*time.Second, 2*time.Millisecond, "the waiter queues")
	require.EqualValues(t, 1, s.Master.Admin().Wait(ctx, 1, time.Second).Val(), "the queue reached the replica")
	s.Failover()
	// The clients' commands follow the sentinel to the new master; the
	// waiter's subscription stays on the old one.
	for _, rdb := range []*redis.ClusterClient{holderRdb, waiterRdb} {
		require.Eventually(t, func() bool {
			node, err := rdb.MasterForKey(ctx, lockKey("demoted"))
			return err == nil && strings.HasSuffix(node.Options().Addr, ":"+strconv.Itoa(s.Master.Port))
		}, 10*time.Second, 10*time.Millisecond, "the client routes to the new master")
	}
	// The demoted master must replicate the new one before the release:
	// the grant message reaches the waiter through it, and the grant counts
	// only once a replica has acknowledged it (the default's WAIT).
	// Failover's REPLICAOF does not wait for the resync, which is a full
	// sync where the old master had writes the promoted replica lacks (a
	// look, a renewal): released before it ended, the waiter failed with
	// ErrNotReplicated or got nothing within fast (4 of 30 runs under two
	// busy loops; the promoted replica then waited repl-diskless-sync-delay,
	// 5 s, before the sync: see redistest's startReplica).
	require.EqualValues(t, 1, s.Master.Admin().Wait(ctx, 1, 5*time.Second).Val(),
		"the demoted master acknowledges the new master's writes")
	require.NoError(t, h.Unlock(ctx))

	l := receive(t, got)
	_, err = holder.TryLock(ctx, "demoted")
	require.ErrorIs(t, err, ErrNotObtained, "the waiter's grant was kept: nobody else may take the lock")
	st, err := s.Master.Admin().HGetAll(ctx, lockKey("demoted")).Result()
	require.NoError(t, err)
	require.Equal(t, map[string]string{l.Owner(): "1"}, st, "the new master has the waiter as the one holder")
	require.NoError(t, l.Unlock(ctx))
}

// With ReplicaOnly a redis.NewFailoverClusterClient subscribes on a
// replica: the release's count on the master misses the waiter, and its
// liveness key gets it the lock.
func TestFailoverClusterClientSubscribedOnAReplica(t *testing.T) {
	ctx := testCtx(t)
	s := redistest.StartSentinel(t)
	holder := sentinelClient(t, s.FailoverClusterClient())
	waiter := sentinelClient(t, s.FailoverClusterClient(func(o *redis.FailoverOptions) { o.ReplicaOnly = true }))
	keys, err := waiter.lockKeys("replica")
	require.NoError(t, err)
	channel := keys.GrantChannel(waiter.id)

	h, err := holder.Lock(ctx, "replica", WithLease(longLease))
	require.NoError(t, err)
	got := lockInBackground(ctx, waiter, "replica")
	require.Eventually(t, func() bool { return s.Master.Admin().LLen(ctx, keys.Queue).Val() == 1 },
		5*time.Second, 2*time.Millisecond, "the waiter queues")
	require.EqualValues(t, 1, s.Replica.Admin().PubSubNumSub(ctx, channel).Val()[channel], "it listens on the replica")
	require.Zero(t, s.Master.Admin().PubSubNumSub(ctx, channel).Val()[channel], "and not on the master")
	require.NoError(t, h.Unlock(ctx))
	l := receive(t, got)
	require.NoError(t, l.Unlock(ctx))
}

// sentinelClient returns a Client on rdb, closed at the end of the test.
func sentinelClient(t *testing.T, rdb redis.UniversalClient, opts ...Option) *Client {
	t.Helper()
	c, err := New(rdb, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// The reviewer's attack: after a failover, a client whose connections still
// reach the demoted master (a client built by hand around Sentinel, hence
// WithLivenessKeys) unlocks there, while a waiter listens there too. The
// release must fail before it publishes: a waiter told of a grant that the
// replica then refuses to write would hold a lock the master never gave it.
func TestUnlockOnADemotedMasterPublishesNoGrant(t *testing.T) {
	ctx := testCtx(t)
	s := redistest.StartSentinel(t)
	demoted := s.Master
	// A liveness TTL longer than the failover takes: the waiter's key, set
	// on the old master and replicated, still lives when the release runs.
	holder := sentinelClient(t, demoted.Client(), WithLivenessKeys(), WithLivenessTTL(10*time.Second))
	waiter := sentinelClient(t, demoted.Client(), WithLivenessKeys(), WithLivenessTTL(10*time.Second))
	keys, err := waiter.lockKeys("stale")
	require.NoError(t, err)
	listener := demoted.Client().Subscribe(ctx, keys.GrantChannel(waiter.id)) // beside the waiter's subscription
	_, err = listener.Receive(ctx)
	require.NoError(t, err)

	h, err := holder.Lock(ctx, "stale", WithLease(longLease))
	require.NoError(t, err)
	// The waiter is stopped, and its leave waited for (Close), before the
	// test ends: its give-back must not outlive the test.
	wctx, stop := context.WithCancel(ctx)
	got := lockInBackground(wctx, waiter, "stale")
	defer func() {
		stop()
		r := within(t, got, "the waiter did not stop")
		require.ErrorIs(t, r.err, ErrNotObtained, "the waiter got a lock the master never granted")
		require.NoError(t, waiter.Close())
	}()
	require.Eventually(t, func() bool { return demoted.Admin().LLen(ctx, keys.Queue).Val() == 1 },
		5*time.Second, 2*time.Millisecond, "the waiter queues")
	require.EqualValues(t, 1, demoted.Admin().Wait(ctx, 1, time.Second).Val(), "the queue reached the replica")
	s.Failover()

	require.ErrorContains(t, h.Unlock(ctx), "READONLY")
	// A message published on the demoted node now is the first the
	// listener gets, unless the release published a grant there.
	require.NoError(t, demoted.Admin().Publish(ctx, keys.GrantChannel(waiter.id), "marker").Err())
	msg, err := listener.ReceiveMessage(ctx)
	require.NoError(t, err)
	require.Equal(t, "marker", msg.Payload, "the demoted master published a grant it could not write")
	st, err := s.Master.Admin().HGetAll(ctx, keys.Hash).Result()
	require.NoError(t, err)
	require.Equal(t, map[string]string{h.Owner(): "1"}, st, "the new master still has the holder")
}
