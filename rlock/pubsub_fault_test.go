package rlock

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// 16 workers over 4 clients increment a plain key by hand under one lock
// for 3s while an admin kills every pub/sub connection every 50ms, so
// release messages are lost all the time.
//
// What can be bounded, and so asserted: the lock's idle time while others
// wait. After a release at time R, a waiter blocked in its wait loop made
// its last attempt at some t < R and saw the holder's PTTL, which the
// watchdog keeps at or below the lease L; it wakes by t+PTTL+1ms < R+L+1ms
// even if no message reaches it, and a reconnect wakes it sooner. So the gap
// between a release and the next acquisition is under L plus a retry's
// round trip, whatever happens to pub/sub. A single Lock's total wait is not
// bounded this way: the lock is not fair, and a waiter can lose every race
// to others, so that is only logged.
func TestPubSubKilledRepeatedlyUnderContention(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	const (
		lease             = 600 * time.Millisecond
		clients, per      = 4, 4
		run, killInterval = 3 * time.Second, 50 * time.Millisecond
		slack             = 400 * time.Millisecond // a retry's round trip on a loaded 2-core machine
	)
	var cs []*Client
	for range clients {
		cs = append(cs, newClient(t, srv, WithWatchdogLease(lease)))
	}

	stop := make(chan struct{})
	var killed atomic.Int64
	var killer sync.WaitGroup
	killer.Go(func() {
		tick := time.NewTicker(killInterval)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				n, err := rdb.ClientKillByFilter(ctx, "TYPE", "pubsub").Result()
				if assertNoError(t, err) {
					killed.Add(n)
				}
			}
		}
	})

	var (
		mu                  sync.Mutex
		held                bool
		lastRelease         time.Time
		maxGap, maxWait     time.Duration
		acquired, increment int
	)
	end := time.Now().Add(run)
	var wg sync.WaitGroup
	for _, c := range cs {
		for range per {
			wg.Go(func() {
				for time.Now().Before(end) {
					start := time.Now()
					l, err := c.Lock(ctx, "hot")
					if !assertNoError(t, err) {
						return
					}
					now := time.Now()
					mu.Lock()
					if held {
						t.Error("two holders at once")
					}
					held = true
					acquired++
					maxWait = max(maxWait, now.Sub(start))
					if !lastRelease.IsZero() {
						maxGap = max(maxGap, now.Sub(lastRelease))
					}
					mu.Unlock()

					v, _ := rdb.Get(ctx, "count").Int()
					assertNoError(t, rdb.Set(ctx, "count", v+1, 0).Err())

					mu.Lock()
					held = false
					increment++
					// Taken before the release script runs, so a gap is
					// measured long rather than short.
					lastRelease = time.Now()
					mu.Unlock()
					assertNoError(t, l.Unlock(ctx))
				}
			})
		}
	}
	wg.Wait()
	close(stop)
	killer.Wait()

	got, err := rdb.Get(ctx, "count").Int()
	require.NoError(t, err)
	t.Logf("%d acquisitions, %d pub/sub connections killed, longest idle gap %v, longest single wait %v",
		acquired, killed.Load(), maxGap, maxWait)
	require.Equal(t, increment, got, "lost updates")
	require.GreaterOrEqual(t, killed.Load(), int64(10), "the fault was not injected")
	require.Less(t, maxGap, lease+slack, "the lock sat idle past the holder's TTL while others waited")
	require.Zero(t, rdb.Exists(ctx, lockKey("hot")).Val())
}
