package rlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// After a mixed workload, closing the lock clients must leave no channel
// subscribed (classic or sharded) and no lock held, and closing their Redis
// clients must bring the server's connection count back to where it was.
// Run on a single node (classic pub/sub) and on a one-node cluster
// (sharded pub/sub).
func TestNothingLeftOnTheServerAfterClose(t *testing.T) {
	clusterSrv, clusterReady := oneNodeCluster(t)
	for _, cluster := range []bool{false, true} {
		t.Run(map[bool]string{false: "single", true: "cluster"}[cluster], func(t *testing.T) {
			ctx := testCtx(t)
			srv := clusterSrv
			if cluster {
				clusterReady()
			} else {
				srv = redistest.Start(t)
			}
			rdb := admin(t, srv)
			dial := func() redis.UniversalClient {
				if cluster { // as the default user: redistest's ACL user has the single-node rules
					return redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr}})
				}
				return redis.NewClient(redistest.Options(srv.Addr))
			}
			channels := func() []string {
				classic, err := rdb.PubSubChannels(ctx, "*").Result()
				require.NoError(t, err)
				sharded, err := rdb.PubSubShardChannels(ctx, "*").Result()
				require.NoError(t, err)
				return append(classic, sharded...)
			}
			baseline := connections(t, ctx, rdb)

			var rdbs []redis.UniversalClient
			var clients []*Client
			for range 3 {
				r := dial()
				c, err := New(r, WithWatchdogLease(600*time.Millisecond))
				require.NoError(t, err)
				rdbs, clients = append(rdbs, r), append(clients, c)
			}
			// The check below is only worth something if waits do show up.
			l, err := clients[0].Lock(ctx, "h0")
			require.NoError(t, err)
			waited := make(chan error, 1)
			go func() {
				w, err := clients[1].Lock(ctx, "h0")
				if err == nil {
					err = w.Unlock(ctx)
				}
				waited <- err
			}()
			grants, err := clients[1].lockKeys("h0")
			require.NoError(t, err)
			require.Eventually(t, func() bool { return slices.Contains(channels(), grants.GrantChannel(clients[1].id)) },
				5*time.Second, 5*time.Millisecond, "the waiter's subscription")
			require.NoError(t, l.Unlock(ctx))
			require.NoError(t, <-waited)

			mixedWorkload(t, ctx, clients)
			for _, c := range clients {
				require.NoError(t, c.Close())
			}
			require.Eventually(t, func() bool { return len(channels()) == 0 }, 5*time.Second, 10*time.Millisecond,
				"channels left subscribed: %v", channels())
			for _, r := range rdbs {
				require.NoError(t, r.Close())
			}
			require.Eventually(t, func() bool { return connections(t, ctx, rdb) == baseline }, 5*time.Second, 10*time.Millisecond,
				"connections: %d, before the clients: %d", connections(t, ctx, rdb), baseline)
			keys, err := rdb.Keys(ctx, "baton:*").Result()
			require.NoError(t, err)
			for _, k := range keys {
				// Counters, and records that expire: request results, last grants.
				require.True(t, strings.HasSuffix(k, ":fence") || strings.Contains(k, ":req:") || strings.HasSuffix(k, ":granted"),
					"left behind: %s", k)
			}
		})
	}
}

func connections(t *testing.T, ctx context.Context, rdb *redis.Client) int {
	list, err := rdb.ClientList(ctx).Result()
	require.NoError(t, err)
	return strings.Count(strings.TrimSpace(list), "\n") + 1
}

// mixedWorkload has 12 goroutines make every kind of call on a few names:
// contended Lock and Unlock, re-entry, TryLock, WaitAtMost, waits cancelled
// by their ctx, ForceUnlock and Inspect.
func mixedWorkload(t *testing.T, ctx context.Context, clients []*Client) {
	var wg sync.WaitGroup
	for g := range 12 {
		c := clients[g%len(clients)]
		wg.Go(func() {
			for i := range 30 {
				name := fmt.Sprintf("h%d", (g+i)%3)
				var l *Lock
				var err error
				switch i % 5 {
				case 0:
					l, err = c.TryLock(ctx, name)
				case 1:
					l, err = c.TryLock(ctx, name, WaitAtMost(time.Duration(rand.IntN(20))*time.Millisecond))
				case 2:
					wctx, cancel := context.WithTimeout(ctx, time.Duration(rand.IntN(5000))*time.Microsecond)
					l, err = c.Lock(wctx, name)
					cancel()
				case 3:
					_, err = c.ForceUnlock(ctx, name)
					if err == nil {
						_, err = c.Inspect(ctx, name)
					}
				default:
					l, err = c.Lock(ctx, name)
				}
				if errors.Is(err, ErrNotObtained) {
					continue
				}
				if !assertNoError(t, err) || l == nil {
					continue
				}
				if in, err := c.Lock(l.Context(), name); err == nil {
					_ = in.Unlock(ctx) // the outer hold may be force-unlocked meanwhile
				}
				if err := l.Unlock(ctx); err != nil && !errors.Is(err, ErrLockLost) && !errors.Is(err, ErrNotHeld) {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
}
