package rlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/reentrant"
)

// The baton pass (issue 10): FIFO across processes, the grant inside the
// release, and every way a waiter can vanish.

// Six clients arrive 80 ms apart while the lock is held: they get it in the
// order they came, each from the release before it.
func TestFIFOAcrossClients(t *testing.T) {
	ctx, srv := serve(t)
	holder := newClient(t, srv)
	l, err := holder.Lock(ctx, "fifo", WithLease(longLease))
	require.NoError(t, err)
	const n = 6
	var turns arrivals
	for i := range n {
		turns.lockInTurn(ctx, t, newClient(t, srv), "fifo", i)
		waitForQueued(t, srv, "fifo", int64(i+1))
		time.Sleep(80 * time.Millisecond)
	}
	require.NoError(t, l.Unlock(ctx))
	require.Equal(t, []int{0, 1, 2, 3, 4, 5}, turns.order(), "acquisition order is arrival order")
}

// A waiter that gives up leaves the queue: the next one gets the release.
func TestCancelledWaiterIsSkipped(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	holder, a, b := newClient(t, srv), newClient(t, srv), newClient(t, srv)
	l, err := holder.Lock(ctx, "skip", WithLease(longLease))
	require.NoError(t, err)
	actx, cancel := context.WithCancel(ctx)
	first := lockInBackground(actx, a, "skip")
	waitForQueued(t, srv, "skip", 1)
	second := lockInBackground(ctx, b, "skip")
	waitForQueued(t, srv, "skip", 2)
	cancel()
	require.ErrorIs(t, (<-first).err, context.Canceled)
	waitForQueued(t, srv, "skip", 1)
	require.NoError(t, l.Unlock(ctx))
	got := receive(t, second)
	require.Equal(t, "1", rdb.HGet(ctx, lockKey("skip"), got.Owner()).Val())
	require.NoError(t, got.Unlock(ctx))
}

// A waiter in a process that is killed while queued costs nothing but one
// skipped entry: the next waiter gets the release at once, with no lease or
// timeout in between.
func TestKilledWaiterIsSkippedAtTheRelease(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	holder, b := newClient(t, srv), newClient(t, srv)
	l, err := holder.Lock(ctx, "dead-waiter", WithLease(longLease))
	require.NoError(t, err)
	ch := startHolder(t, srv, "dead-waiter", longLease) // it waits: the lock is held
	waitForQueued(t, srv, "dead-waiter", 1)
	second := lockInBackground(ctx, b, "dead-waiter")
	waitForQueued(t, srv, "dead-waiter", 2)
	ch.kill()
	ch.awaitDisconnected(ctx, rdb)

	released := time.Now()
	require.NoError(t, l.Unlock(ctx))
	got := receive(t, second)
	t.Logf("the next waiter got the lock %v after the release", time.Since(released))
	require.Zero(t, rdb.LLen(ctx, lockKey("dead-waiter")+":queue").Val(), "the dead entry was dropped")
	require.NoError(t, got.Unlock(ctx))
}

// More dead waiters ahead of a live one than one script drops (grantTries
// in grant.lua): the holder's Unlock still hands the lock to the live
// waiter, and a third client's TryLock, repeated meanwhile, never takes it
// past the queue.
func TestLiveWaiterBehindManyDeadOnesGetsTheRelease(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	holder, waiter, other := newClient(t, srv), newClient(t, srv), newClient(t, srv)
	const name, dead = "dead-queue", 40
	l, err := holder.Lock(ctx, name, WithLease(longLease))
	require.NoError(t, err)
	// Waiters whose clients are gone: nobody subscribes their channels.
	keys, err := reentrant.Namespace{}.Keys(name)
	require.NoError(t, err)
	for i := range dead {
		w := keys.Waiter(fmt.Sprint("dead-", i), fmt.Sprint("gone-", i))
		r, err := keys.AcquireNew(ctx, rdb, fmt.Sprint("owner-", i), longLease, w)
		require.NoError(t, err)
		require.False(t, r.Acquired)
	}
	second := lockInBackground(ctx, waiter, name)
	waitForQueued(t, srv, name, dead+1)
	barged := tryLockUntilStopped(ctx, t, other, name)
	t.Cleanup(func() { barged() })

	require.NoError(t, l.Unlock(ctx))
	got := receive(t, second)
	require.Zero(t, barged(), "a TryLock took the lock past the queue")
	require.Greater(t, got.Token(), l.Token())
	require.Zero(t, rdb.LLen(ctx, lockKey(name)+":queue").Val())
	require.NoError(t, got.Unlock(ctx))
}

// tryLockUntilStopped calls c.TryLock(name) over and over on a goroutine,
// unlocking what it gets, until the returned func is called: that stops it
// and reports how many TryLocks got the lock.
func tryLockUntilStopped(ctx context.Context, t *testing.T, c *Client, name string) func() int {
	stop := make(chan struct{})
	done := make(chan int)
	go func() {
		n := 0
		defer func() { done <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			l, err := c.TryLock(ctx, name)
			switch {
			case err == nil:
				n++
				if !assertNoError(t, l.Unlock(ctx)) {
					return
				}
			case !errors.Is(err, ErrNotObtained):
				t.Error(err)
				return
			}
		}
	}()
	return sync.OnceValue(func() int {
		close(stop)
		return <-done
	})
}

// Waiters sharing an owner through WithOwner queue as separate calls, and
// re-enter each other's holds: the grant to one of them wakes the others,
// which re-enter that hold at once, as a new call of the owner would
// (outside attack 6: they stayed queued behind their own owner's hold until
// their periodic look, a third of the lease).
func TestSharedOwnerWaitersReenterAtTheGrant(t *testing.T) {
	ctx, srv := serve(t)
	holder := newClient(t, srv)
	requireOwnerWaitersReenter(t, ctx, holder, []*redistest.Server{srv}, func() *Client { return newClient(t, srv) })
}

// requireOwnerWaitersReenter has two calls of one owner queue behind
// holder's hold of the lock "shared" (on srvs[0], the first node of a
// quorum), and requires both to hold once holder unlocks: one hold, counted
// twice, made within fast of the Unlock, well before their periodic look.
func requireOwnerWaitersReenter(t *testing.T, ctx context.Context, holder *Client, srvs []*redistest.Server, newClient func() *Client) {
	t.Helper()
	l, err := holder.Lock(ctx, "shared")
	require.NoError(t, err)
	job := WithOwner(ctx, "job-9")
	first := lockInBackground(job, newClient(), "shared")
	waitForQueued(t, srvs[0], "shared", 1)
	second := lockInBackground(job, newClient(), "shared")
	waitForQueued(t, srvs[0], "shared", 2)
	require.NoError(t, l.Unlock(ctx))
	a, b := receive(t, first), receive(t, second)
	require.Equal(t, "job-9", a.Owner())
	require.Equal(t, a.Token(), b.Token(), "one hold of the owner")
	st, err := holder.Inspect(ctx, "shared")
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"job-9": 2}, st.Holders)
	require.NoError(t, a.Unlock(ctx))
	require.NoError(t, b.Unlock(ctx))
}

// A storm: 16 clients, no hold time. No two holders, and every client gets
// a fair share.
func TestStormIsExclusiveAndFair(t *testing.T) {
	ctx, srv := serve(t)
	const clients = 16
	var inside, most atomic.Int32
	counts := make([]int, clients)
	deadline := time.Now().Add(2 * time.Second)
	var wg sync.WaitGroup
	for i := range clients {
		c := newClient(t, srv)
		wg.Go(func() {
			for time.Now().Before(deadline) {
				l, err := c.Lock(ctx, "storm")
				if !assertNoError(t, err) {
					return
				}
				if n := inside.Add(1); n > most.Load() {
					most.Store(n)
				}
				inside.Add(-1)
				counts[i]++
				if !assertNoError(t, l.Unlock(ctx)) {
					return
				}
			}
		})
	}
	wg.Wait()
	lo, hi := counts[0], counts[0]
	for _, n := range counts {
		lo, hi = min(lo, n), max(hi, n)
	}
	t.Logf("acquisitions per client: %v", counts)
	require.EqualValues(t, 1, most.Load(), "two holders at once")
	require.GreaterOrEqual(t, float64(lo)/float64(hi), 0.8, "fairness min/max")
}
