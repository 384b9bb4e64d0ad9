package bench

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

// openRW opens a redisson-rw locker on a client of its own, as one process
// would; both are closed when t ends.
func openRW(t *testing.T, srv *redistest.Server) RWLocker {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	l, err := newRedissonRW(Env{Client: rdb, Prefix: "rw:"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close(); _ = rdb.Close() })
	return l
}

// lockAsync starts take in a goroutine; the channel yields its hold once
// granted.
func lockAsync(ctx context.Context, take func(context.Context, string) (Held, error)) <-chan Held {
	got := make(chan Held, 1)
	go func() {
		if h, err := take(ctx, "x"); err == nil {
			got <- h
		}
		close(got)
	}()
	return got
}

// The baseline must behave as Redisson's RReadWriteLock does: a read is
// granted whenever the mode is read, even with a writer waiting, so readers
// that keep overlapping keep the writer out; the writer gets in as soon as
// the last read leaves, woken by the unlock message.
func TestRedissonRWIsReaderPreferring(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	writer := openRW(t, srv)
	readers := []RWLocker{openRW(t, srv), openRW(t, srv)}

	held, err := readers[0].RLock(ctx, "x")
	require.NoError(t, err)
	wrote := lockAsync(ctx, writer.Lock)
	for i := range 6 { // reads overlap, each taken before the last one leaves
		bounded, cancel := context.WithTimeout(ctx, 5*time.Second)
		next, err := readers[(i+1)%2].RLock(bounded, "x")
		cancel()
		require.NoError(t, err, "a read is granted under a read, writer waiting or not")
		require.NoError(t, held.Unlock(ctx))
		held = next
		select {
		case <-wrote:
			t.Fatal("the writer got in while a read was held")
		case <-time.After(20 * time.Millisecond):
		}
	}
	require.NoError(t, held.Unlock(ctx))
	select {
	case w := <-wrote:
		require.NotNil(t, w)
		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		_, err := readers[0].RLock(short, "x")
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded, "no read under a write")
		require.NoError(t, w.Unlock(ctx))
		require.ErrorIs(t, w.Unlock(ctx), errNotHeld)
	case <-time.After(5 * time.Second):
		t.Fatal("the writer was not woken by the last read's unlock")
	}
	r, err := readers[1].RLock(ctx, "x")
	require.NoError(t, err, "free again")
	require.NoError(t, r.Unlock(ctx))
	require.Zero(t, srv.Admin().Exists(ctx, "rw:x").Val(), "the hash is gone with its last holder")
}

// Reads taken inside one's own write stay when the write leaves, and the
// lock is read-mode then: another reader gets in, a writer does not.
func TestRedissonRWReadInsideWriteOutlivesIt(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	owner, other := openRW(t, srv), openRW(t, srv)
	w, err := owner.Lock(ctx, "x")
	require.NoError(t, err)
	r, err := owner.RLock(ctx, "x")
	require.NoError(t, err, "a read inside one's own write")
	require.NoError(t, w.Unlock(ctx))
	require.Equal(t, "read", srv.Admin().HGet(ctx, "rw:x", "mode").Val())
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err = other.Lock(short, "x")
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	r2, err := other.RLock(ctx, "x")
	require.NoError(t, err)
	require.NoError(t, r.Unlock(ctx))
	require.NoError(t, r2.Unlock(ctx))
	require.ErrorIs(t, r2.Unlock(ctx), errNotHeld)
}

// Workers in one process, each with its own client, take 1 or 2 of 4
// permits: the holders, counted here, never hold more than 4, and every
// permit is back at the end.
func TestCounterSemaphoreNeverOverGrants(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	const permits, workers, rounds = 4, 8, 40
	var inUse, most atomic.Int64
	var wg sync.WaitGroup
	for id := range workers {
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
		l, err := newCounterSemaphore(Env{Client: rdb, Prefix: "sem:", Permits: permits})
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Close(); _ = rdb.Close() })
		wg.Go(func() {
			for i := range rounds {
				n := int64(1 + (id+i)%2)
				h, err := l.Acquire(ctx, "s", n)
				if err != nil {
					t.Error(err)
					return
				}
				now := inUse.Add(n)
				for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
				}
				time.Sleep(time.Millisecond)
				inUse.Add(-n)
				if err := h.Unlock(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, most.Load(), int64(permits))
	require.Greater(t, most.Load(), int64(2), "holders overlapped: the test exercised sharing")
	require.Equal(t, "4", srv.Admin().Get(ctx, "sem:s").Val())
}
