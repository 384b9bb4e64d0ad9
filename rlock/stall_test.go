package rlock

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// ctxBound makes go-redis bound each command by the caller's ctx. Without
// it a command waits for ReadTimeout (3s by default) whatever the ctx says.
func ctxBound(o *redis.Options) { o.ContextTimeoutEnabled = true }

// A stalled server answers nothing. Every call made with a 500ms ctx must
// return by that deadline with an error matching context.DeadlineExceeded.
// Once the server is back, what the failed calls may have left behind is
// gone within a lease, and the lock still excludes.
func TestServerStallCallsReturnByTheirDeadline(t *testing.T) {
	for _, tc := range []struct {
		name          string
		stall, resume func(*testing.T, *redistest.Server, *redis.Client)
	}{
		{"SIGSTOP", func(_ *testing.T, s *redistest.Server, _ *redis.Client) { s.Pause() },
			func(_ *testing.T, s *redistest.Server, _ *redis.Client) { s.Resume() }},
		{"CLIENT PAUSE WRITE", func(t *testing.T, _ *redistest.Server, rdb *redis.Client) {
			require.NoError(t, rdb.Do(context.Background(), "CLIENT", "PAUSE", 3000, "WRITE").Err())
		}, func(t *testing.T, _ *redistest.Server, rdb *redis.Client) {
			require.NoError(t, rdb.Do(context.Background(), "CLIENT", "UNPAUSE").Err())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			srv := redistest.Start(t)
			rdb := admin(t, srv)
			// The holder's lease outlasts the stall; the waiter's is short,
			// because an acquire it gave up on may still run once the server
			// reads it, and then holds the lock for up to a lease.
			const holderLease, lease = 3 * time.Second, time.Second
			holder := newClient(t, srv, WithWatchdogLease(holderLease))
			c, err := New(srv.Client(ctxBound), WithWatchdogLease(lease))
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			held, err := holder.Lock(ctx, "held")
			require.NoError(t, err)
			mine, err := c.Lock(ctx, "mine")
			require.NoError(t, err)

			tc.stall(t, srv, rdb)
			const deadline = 500 * time.Millisecond
			calls := map[string]func(context.Context) error{
				"Lock":           func(ctx context.Context) error { _, err := c.Lock(ctx, "free"); return err },
				"Lock held lock": func(ctx context.Context) error { _, err := c.Lock(ctx, "held"); return err },
				"TryLock":        func(ctx context.Context) error { _, err := c.TryLock(ctx, "free2"); return err },
				"Unlock":         func(ctx context.Context) error { return mine.Unlock(ctx) },
			}
			var mu sync.Mutex
			took, errs := map[string]time.Duration{}, map[string]error{}
			var wg sync.WaitGroup
			for name, call := range calls {
				wg.Go(func() {
					cctx, cancel := context.WithTimeout(ctx, deadline)
					defer cancel()
					start := time.Now()
					err := call(cctx)
					mu.Lock()
					took[name], errs[name] = time.Since(start), err
					mu.Unlock()
				})
			}
			wg.Wait()
			tc.resume(t, srv, rdb)
			for name := range calls {
				require.ErrorIs(t, errs[name], context.DeadlineExceeded, name)
				require.Less(t, took[name], deadline+300*time.Millisecond, "%s returned late", name)
			}

			// The Unlock that timed out left its handle held, and retrying it
			// releases exactly once, whether or not the first attempt ran.
			require.NoError(t, mine.Unlock(ctx))
			require.Zero(t, rdb.Exists(ctx, lockKey("mine")).Val())
			for _, name := range []string{"free", "free2"} {
				lctx, cancel := context.WithTimeout(ctx, lease+fast)
				l, err := c.Lock(lctx, name)
				cancel()
				require.NoError(t, err, "%s still taken a lease after the stall", name)
				require.NoError(t, l.Unlock(ctx))
			}
			require.NoError(t, held.Context().Err(), "the holder outlived the stall")
			require.NoError(t, held.Unlock(ctx))
			counterRun(t, ctx, rdb, []*Client{c, holder}, "after-stall", 4, 100)
		})
	}
}

// counterRun has workers goroutines on each client increment a plain key by
// hand (GET, +1, SET) under one lock, total times in all, and checks that no
// update was lost and that no two holders overlapped.
func counterRun(t *testing.T, ctx context.Context, rdb *redis.Client, clients []*Client, name string, workers, total int) {
	t.Helper()
	counter := "count:" + name
	var next, occupancy, maxOccupancy atomic.Int64
	var wg sync.WaitGroup
	for _, c := range clients {
		for range workers {
			wg.Go(func() {
				for next.Add(1) <= int64(total) {
					l, err := c.Lock(ctx, name)
					if !assertNoError(t, err) {
						return
					}
					if n := occupancy.Add(1); n > maxOccupancy.Load() {
						maxOccupancy.Store(n)
					}
					v, _ := rdb.Get(ctx, counter).Int()
					err = rdb.Set(ctx, counter, v+1, 0).Err()
					occupancy.Add(-1)
					assertNoError(t, err)
					assertNoError(t, l.Unlock(ctx))
				}
			})
		}
	}
	wg.Wait()
	got, err := rdb.Get(ctx, counter).Int()
	require.NoError(t, err)
	require.Equal(t, total, got, "lost updates")
	require.EqualValues(t, 1, maxOccupancy.Load(), "two holders at once")
}
