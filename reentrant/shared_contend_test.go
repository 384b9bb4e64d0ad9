package reentrant

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// contend runs workers that each, rounds times, acquire the mode pick
// gives them, waiting as a waiter does (its grant message, or a look when
// its wait runs out), then release it. While they hold, the weights they
// hold are summed: the sum must never exceed size. The sum counts a hold
// only between its grant and its release, so it can only understate what
// Redis has granted.
func contend(t *testing.T, ctx context.Context, rdb *redis.Client, k SharedKeys, size int64, workers, rounds int, pick func(r *rand.Rand) SharedMode) {
	t.Helper()
	var used, peak atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds)
	for i := range workers {
		c := newClient(t, rdb, k, fmt.Sprint("worker-", i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(i), 7))
			for j := range rounds {
				s := pick(r)
				owner := fmt.Sprintf("o-%d-%d", i, j)
				token, err := waitFor(ctx, rdb, c, s, owner, c.waiter(fmt.Sprintf("w%d-%d", i, j)))
				if err != nil {
					errs <- err
					return
				}
				if n := used.Add(s.Weight()); n > size {
					errs <- fmt.Errorf("%s took %d: %d held of %d", owner, s.Weight(), n, size)
				} else if n > peak.Load() {
					peak.Store(n)
				}
				time.Sleep(time.Duration(r.IntN(500)) * time.Microsecond)
				used.Add(-s.Weight())
				if _, err := s.Release(ctx, rdb, owner, token, "rel-"+owner); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	t.Logf("peak %d of %d", peak.Load(), size)
	require.Empty(t, queued(t, ctx, rdb, k))
	requireOnlyExpiringKeys(t, ctx, rdb, k)
}

// waitFor acquires s for owner as waiter w of c, and returns its hold ID.
func waitFor(ctx context.Context, rdb *redis.Client, c *client, s SharedMode, owner string, w Waiter) (uint64, error) {
	for {
		r, err := s.AcquireNew(ctx, rdb, owner, testLease, w)
		if err != nil || r.Acquired {
			return r.HoldID(), err
		}
		wait := 100 * time.Millisecond
		if r.HolderTTL > 0 {
			wait = min(wait, r.HolderTTL)
		}
		msgCtx, cancel := context.WithTimeout(ctx, wait)
		msg, err := c.sub.ReceiveMessage(msgCtx)
		cancel()
		if err != nil {
			continue // a look
		}
		gs, err := ParseGrants(msg.Payload)
		if err != nil {
			return 0, err
		}
		for _, g := range gs {
			if g.Waiter == w.ID {
				return g.HoldID(), nil
			}
		}
	}
}

// Writes never hold with anyone, under contention of waiting reads and
// writes.
func TestRWExclusionUnderContention(t *testing.T) {
	ctx, rdb, k := setupShared(t, KindRW, "contend-rw", 0)
	read, write := rw(t, k)
	contend(t, ctx, rdb, k, WriteWeight, 8, 25, func(r *rand.Rand) SharedMode {
		if r.IntN(3) == 0 {
			return write
		}
		return read
	})
}

// Permits held never exceed the size, under contention of waiters asking
// for different numbers of permits.
func TestSemaphorePermitsNeverExceedTheSize(t *testing.T) {
	ctx, rdb, k := setupShared(t, KindSemaphore, "contend-sem", 5)
	modes := []SharedMode{permits(t, k, 1), permits(t, k, 2), permits(t, k, 3)}
	contend(t, ctx, rdb, k, 5, 8, 25, func(r *rand.Rand) SharedMode { return modes[r.IntN(len(modes))] })
}
