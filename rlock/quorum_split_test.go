package rlock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench"
	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/rlock"
)

// Split votes: 16 contenders in 4 Clients on 3 nodes, one of which answers
// 2 ms later each way, so that the contenders' looks reach the nodes in
// different orders and the nodes grant different heads. Every call
// completes (none livelocks: each looks once per wake-up, and a waiter
// keeps only the grants of a prefix of the nodes, which only one waiter
// can hold), there is never more than one holder, tokens rise from holder
// to holder, and the calls whose ctx ends while they wait leave nothing
// behind on any node.
func TestQuorumSplitVote(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srvs := []*redistest.Server{redistest.Start(t), redistest.Start(t), redistest.Start(t)}
	slow, err := bench.StartDelayProxy(srvs[1].Addr, 2*time.Millisecond)
	require.NoError(t, err)
	t.Cleanup(func() { _ = slow.Close() })
	addrs := []string{srvs[0].Addr, slow.Addr, srvs[2].Addr}
	var clients []*rlock.Client
	for range 4 {
		nodes := make([]redis.UniversalClient, len(addrs))
		for i, a := range addrs {
			o := redistest.Options("")
			o.Addr = a
			rdb := redis.NewClient(o)
			t.Cleanup(func() { _ = rdb.Close() })
			nodes[i] = rdb
		}
		c, err := rlock.NewQuorum(nodes)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		clients = append(clients, c)
	}

	var mu sync.Mutex
	holding, holds, gaveUp := false, 0, 0
	var last uint64
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 10 {
				// Every fourth call gives up after a few ms of waiting.
				callCtx, stop := ctx, context.CancelFunc(func() {})
				if (g+i)%4 == 0 {
					callCtx, stop = context.WithTimeout(ctx, time.Duration(1+i)*time.Millisecond)
				}
				l, err := clients[g%4].Lock(callCtx, "split")
				stop()
				if errors.Is(err, rlock.ErrNotObtained) && ctx.Err() == nil {
					mu.Lock()
					gaveUp++
					mu.Unlock()
					continue
				}
				if !assert(t, err == nil, "Lock: %v", err) {
					return
				}
				mu.Lock()
				assert(t, !holding, "two holders at once")
				assert(t, l.Token() > last, "token %d after %d", l.Token(), last)
				holding, last = true, l.Token()
				holds++
				mu.Unlock()
				time.Sleep(200 * time.Microsecond)
				mu.Lock()
				holding = false
				mu.Unlock()
				assert(t, l.Unlock(ctx) == nil, "Unlock")
			}
		})
	}
	wg.Wait()
	t.Logf("%d holds, %d calls gave up", holds, gaveUp)
	require.Positive(t, holds)
	for _, s := range srvs {
		require.Eventually(t, func() bool {
			k := "baton:{split}"
			n, err := s.Admin().Exists(ctx, k, k+":queue", k+":granted", k+":wake").Result()
			return err == nil && n == 0
		}, 10*time.Second, 10*time.Millisecond, "nothing left on %s", s.Addr)
	}
}

// assert reports a failure from any goroutine, and whether ok.
func assert(t *testing.T, ok bool, format string, args ...any) bool {
	t.Helper()
	if !ok {
		t.Errorf(format, args...)
	}
	return ok
}
