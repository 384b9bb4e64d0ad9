package rlock

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/reentrant"
)

// unused is a loopback address nothing listens on: the clients below are
// built and closed, never dialed.
const unused = "127.0.0.1:1"

// failoverOptions are Sentinel options that New must see through, whatever
// constructor they go to.
func failoverOptions() *redis.FailoverOptions {
	return &redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{unused}}
}

// go-redis marks a Sentinel client only by the Addr of its options, which
// is not its API. This pins the marker in the go-redis of go.mod: if a
// release changes it, this test fails, and isFailover must learn the new
// one (until then it still counts any Addr a client could not dial).
func TestGoRedisFailoverMarker(t *testing.T) {
	rdb := redis.NewFailoverClient(failoverOptions())
	t.Cleanup(func() { _ = rdb.Close() })
	require.Equal(t, failoverAddr, rdb.Options().Addr)

	u, ok := redis.NewUniversalClient(&redis.UniversalOptions{MasterName: "m", Addrs: []string{unused}}).(*redis.Client)
	require.True(t, ok, "NewUniversalClient with MasterName returns a failover *redis.Client")
	t.Cleanup(func() { _ = u.Close() })
	require.Equal(t, failoverAddr, u.Options().Addr)

	cc := redis.NewFailoverClusterClient(failoverOptions())
	t.Cleanup(func() { _ = cc.Close() })
	require.NotNil(t, cc.Options().ClusterSlots, "NewFailoverClusterClient maps its slots itself")
}

// Every client whose receiver counts cannot judge liveness judges it by
// key; only a plain client and a Redis Cluster with sharded pub/sub trust
// the count.
func TestLivenessJudgedByKeyWhereTheCountCannot(t *testing.T) {
	type maker func() redis.UniversalClient
	client := func(o *redis.Options) maker { return func() redis.UniversalClient { return redis.NewClient(o) } }
	universal := func(o *redis.UniversalOptions) maker {
		return func() redis.UniversalClient { return redis.NewUniversalClient(o) }
	}
	plain := client(&redis.Options{Addr: unused})
	cluster := func() redis.UniversalClient {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{unused}})
	}
	cases := []struct {
		name    string
		rdb     maker
		opts    []Option
		sharded bool
		byKey   bool
	}{
		{"plain", plain, nil, false, false},
		{"unix socket", client(&redis.Options{Network: "unix", Addr: "/tmp/no-redis.sock"}), nil, false, false},
		{"cluster", cluster, nil, true, false},
		{"cluster, classic", cluster, []Option{WithClassicPubSub()}, false, true},
		{"NewFailoverClient", func() redis.UniversalClient { return redis.NewFailoverClient(failoverOptions()) }, nil, false, true},
		{"NewUniversalClient, MasterName", universal(&redis.UniversalOptions{MasterName: "m", Addrs: []string{unused}}), nil, false, true},
		{"NewUniversalClient, MasterName, RouteRandomly",
			universal(&redis.UniversalOptions{MasterName: "m", Addrs: []string{unused}, RouteRandomly: true}), nil, false, true},
		{"NewFailoverClusterClient", func() redis.UniversalClient { return redis.NewFailoverClusterClient(failoverOptions()) }, nil, false, true},
		{"an Addr no TCP client could dial", client(&redis.Options{Addr: "SentinelClient"}), nil, false, true},
		{"a port no TCP client could dial", client(&redis.Options{Addr: "127.0.0.1:redis"}), nil, false, true},
		{"plain, WithLivenessKeys", plain, []Option{WithLivenessKeys()}, false, true},
		{"cluster, WithLivenessKeys", cluster, []Option{WithLivenessKeys()}, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rdb := tc.rdb()
			t.Cleanup(func() { _ = rdb.Close() })
			c, err := New(rdb, tc.opts...)
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			require.Equal(t, tc.sharded, c.ns.Sharded, "sharded pub/sub")
			require.Equal(t, tc.byKey, c.ns.ReceiversElsewhere, "liveness judged by key")
		})
	}
}

// With WithLivenessKeys a plain client's release skips a waiter whose
// liveness key has run out even though its client still receives the
// grant: the one queued behind it gets the lock. Judged by the count, the
// release would grant the first waiter, which has stopped looking.
func TestWithLivenessKeysSkipsAWaiterWithoutAKey(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	const aliveTTL = 150 * time.Millisecond
	holder := newClient(t, srv, WithLivenessKeys(), WithLivenessTTL(aliveTTL))
	waiter := newClient(t, srv, WithLivenessKeys(), WithLivenessTTL(aliveTTL))

	h, err := holder.Lock(ctx, "by-key", WithLease(longLease))
	require.NoError(t, err)
	keys, err := reentrant.Namespace{ReceiversElsewhere: true, AliveTTL: aliveTTL}.Keys("by-key")
	require.NoError(t, err)
	// A waiter that queued and stopped looking, whose client still listens.
	stale := keys.Waiter("stale", "stale-client")
	listening := srv.Admin().Subscribe(ctx, stale.Channel)
	t.Cleanup(func() { _ = listening.Close() })
	_, err = listening.Receive(ctx)
	require.NoError(t, err)
	r, err := keys.AcquireNew(ctx, rdb, "stale-owner", longLease, stale)
	require.NoError(t, err)
	require.False(t, r.Acquired)
	got := lockInBackground(ctx, waiter, "by-key")
	waitForQueued(t, srv, "by-key", 2)
	require.Eventually(t, func() bool { return rdb.Exists(ctx, stale.Alive).Val() == 0 }, fast, 5*time.Millisecond)

	require.NoError(t, h.Unlock(ctx))
	l := receive(t, got)
	require.Equal(t, map[string]string{l.Owner(): "1"}, rdb.HGetAll(ctx, keys.Hash).Val(), "the live waiter holds the lock")
	require.Zero(t, rdb.LLen(ctx, keys.Queue).Val(), "the stale waiter's entry was dropped")
	require.NoError(t, l.Unlock(ctx))
}

// New dials nothing, as go-redis's constructors do not: a client may be
// made before its server is up. Reading a master's replicas (the default
// acknowledgements) waits for the first grant; a dial at New left go-redis's
// Sentinel lookups running past Close.
func TestNewDialsNothing(t *testing.T) {
	var dials atomic.Int64
	rdb := redis.NewClient(&redis.Options{Addr: unused, MaxRetries: -1,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return nil, errors.New("no server")
		}})
	t.Cleanup(func() { _ = rdb.Close() })
	c, err := New(rdb)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.Zero(t, dials.Load())
}
