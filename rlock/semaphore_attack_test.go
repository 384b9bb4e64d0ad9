package rlock

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/reentrant"
)

// Safety under contention: four Clients, three callers each, ask for 1 or
// 2 of 3 permits at random, some giving up at random points of the wait;
// a checker counts the permits held and fails the moment they exceed the
// size. At the end nothing is held, queued or left.
func TestSemaphoreNeverOverCommitted(t *testing.T) {
	ctx, srv := serve(t)
	const name, size = "contended", 3
	var held, peak, grants atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(2 * time.Second)
	for i := range 4 {
		sem := newClient(t, srv).Semaphore(name, size)
		for j := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(i), uint64(j)))
				for time.Now().Before(stop) && ctx.Err() == nil {
					semChurn(ctx, t, sem, rng, &held, &peak, &grants)
				}
			}()
		}
	}
	wg.Wait()
	t.Logf("%d grants, peak %d permits held", grants.Load(), peak.Load())
	require.LessOrEqual(t, peak.Load(), int64(size))
	require.Positive(t, grants.Load())
	sem := newClient(t, srv).Semaphore(name, size)
	require.Eventually(t, func() bool {
		st := inspect(t, sem)
		return st.Held == 0 && st.Queued == 0
	}, fast, 5*time.Millisecond, "a cancelled waiter left its record or a hold")
	requireOnlyFence(t, admin(t, srv), name)
}

// semChurn is one caller's turn in TestSemaphoreNeverOverCommitted: an
// Acquire of 1 or 2 permits, given up after a random wait one time in
// three, then a short hold counted by the checker.
func semChurn(ctx context.Context, t *testing.T, sem *Semaphore, rng *rand.Rand, held, peak, grants *atomic.Int64) {
	n := 1 + rng.Int64N(2)
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	if rng.IntN(3) == 0 {
		time.AfterFunc(time.Duration(rng.IntN(3000))*time.Microsecond, cancel)
	}
	p, err := sem.Acquire(actx, n)
	if err != nil {
		if actx.Err() == nil {
			require.NoError(t, err)
		}
		return
	}
	now := held.Add(n)
	for old := peak.Load(); now > old && !peak.CompareAndSwap(old, now); old = peak.Load() {
	}
	grants.Add(1)
	time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond)
	held.Add(-n)
	require.NoError(t, p.Release(ctx))
}

// A cancelled waiter leaves no record; one whose grant raced its cancel
// passes the permits on, so the next waiter gets them at once rather than
// after the abandoned hold's lease.
func TestSemaphoreCancelledWaiterPassesItsGrantOn(t *testing.T) {
	ctx, srv := serve(t)
	const name = "cancelled"
	a, b, c := newClient(t, srv), newClient(t, srv), newClient(t, srv)
	sem := a.Semaphore(name, 1)
	granted := 0
	for i := range 20 {
		holder, err := sem.Acquire(ctx, 1)
		require.NoError(t, err)
		bctx, cancel := context.WithCancel(ctx)
		gave := acquireInBackground(bctx, b.Semaphore(name, 1), 1)
		waitForSemQueued(t, srv, name, 1)
		go func() {
			time.Sleep(time.Duration(i%5) * 100 * time.Microsecond)
			cancel()
		}()
		require.NoError(t, holder.Release(ctx))
		if r := <-gave; r.err == nil {
			granted++
			require.NoError(t, r.p.Release(ctx)) // the grant came first
		} else {
			require.ErrorIs(t, r.err, context.Canceled)
		}
		next, err := c.Semaphore(name, 1).Acquire(ctx, 1, WaitAtMost(fast))
		require.NoError(t, err, "round %d: the raced grant was not passed on", i)
		require.NoError(t, next.Release(ctx))
	}
	t.Logf("%d of 20 cancelled waiters got their grant first", granted)
	st := inspect(t, sem)
	require.Zero(t, st.Queued)
	require.Zero(t, st.Held)

	// Cancelled while queued, with nothing racing: its record goes.
	holder, err := sem.Acquire(ctx, 1)
	require.NoError(t, err)
	bctx, cancel := context.WithCancel(ctx)
	gave := acquireInBackground(bctx, b.Semaphore(name, 1), 1)
	waitForSemQueued(t, srv, name, 1)
	cancel()
	require.ErrorIs(t, (<-gave).err, ErrNotObtained)
	waitForSemQueued(t, srv, name, 0)
	require.NoError(t, holder.Release(ctx))
	requireOnlyFence(t, admin(t, srv), name)
}

// Waiters whose clients are gone (nobody receives on their channels) cost
// one skipped record each at the release: the live waiter behind them
// gets its permits at once, not after a timeout or a lease.
func TestSemaphoreDeadWaitersAreSkipped(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	const name, dead = "dead-sem", 5
	holder := newClient(t, srv).Semaphore(name, 2)
	p, err := holder.Acquire(ctx, 2, WithLease(longLease))
	require.NoError(t, err)
	k, err := reentrant.Namespace{}.SharedKeys(reentrant.KindSemaphore, name)
	require.NoError(t, err)
	mode, err := k.Permits(1)
	require.NoError(t, err)
	for i := range dead {
		w := k.Waiter(fmt.Sprint("dead-", i), fmt.Sprint("gone-", i))
		r, err := mode.AcquireNew(ctx, rdb, fmt.Sprint("owner-", i), longLease, w)
		require.NoError(t, err)
		require.False(t, r.Acquired)
	}
	live := acquireInBackground(ctx, newClient(t, srv).Semaphore(name, 2), 2)
	waitForSemQueued(t, srv, name, dead+1)

	released := time.Now()
	require.NoError(t, p.Release(ctx))
	got := receivePermit(t, live)
	t.Logf("the live waiter got its permits %v after the release", time.Since(released))
	st := inspect(t, holder)
	require.Zero(t, st.Queued, "the dead records were dropped")
	require.Equal(t, map[string]PermitState{got.Owner(): st.Holders[got.Owner()]}, st.Holders, "no dead waiter holds")
	require.NoError(t, got.Release(ctx))
	requireOnlyFence(t, rdb, name)
}
