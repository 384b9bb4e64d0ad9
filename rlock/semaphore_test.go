package rlock

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/reentrant"
)

// semKey is the hash key of the semaphore called name under the default
// prefix.
func semKey(name string) string { return lockKey(name) + ":sem" }

// permitted is the result of an Acquire on another goroutine.
type permitted struct {
	p   *Permit
	err error
}

// acquireInBackground calls sem.Acquire(ctx, n) on another goroutine.
func acquireInBackground(ctx context.Context, sem *Semaphore, n int64) <-chan permitted {
	got := make(chan permitted, 1)
	go func() {
		p, err := sem.Acquire(ctx, n)
		got <- permitted{p, err}
	}()
	return got
}

// receivePermit returns a background Acquire's permit, failing after fast.
func receivePermit(t *testing.T, res <-chan permitted) *Permit {
	t.Helper()
	r := within(t, res, "the waiter did not get its permits")
	require.NoError(t, r.err)
	return r.p
}

// ask is an Acquire of n permits on sem.
type ask struct {
	sem *Semaphore
	n   int64
}

// queueInOrder makes each of asks, on semaphore name, in the background,
// each once the one before is queued, and returns their results in order.
func queueInOrder(ctx context.Context, t *testing.T, srv *redistest.Server, name string, asks ...ask) []<-chan permitted {
	t.Helper()
	var out []<-chan permitted
	for i, a := range asks {
		out = append(out, acquireInBackground(ctx, a.sem, a.n))
		waitForSemQueued(t, srv, name, int64(i+1))
	}
	return out
}

// requireWaiting fails if a background Acquire has returned.
func requireWaiting(t *testing.T, res <-chan permitted, why string) {
	t.Helper()
	select {
	case r := <-res:
		t.Fatalf("%s: got %v, %v", why, r.p, r.err)
	case <-time.After(50 * time.Millisecond):
	}
}

// waitForSemQueued waits until n calls wait in the queue of semaphore name.
func waitForSemQueued(t *testing.T, srv *redistest.Server, name string, n int64) {
	t.Helper()
	waitForQueueLen(t, srv, semKey(name), n)
}

// inspect is sem.Inspect, which must succeed, with Held checked against
// the holders and the size.
func inspect(t *testing.T, sem *Semaphore) SemaphoreState {
	t.Helper()
	st, err := sem.Inspect(context.Background())
	require.NoError(t, err)
	var held int64
	for _, h := range st.Holders {
		held += h.Count
	}
	require.Equal(t, held, st.Held, "held is the sum of the holds")
	return st
}

// A semaphore's calls, their arguments, and what they leave: permits held
// and released, tokens rising, a second Release refused, a Permit's
// Context making no re-entry, and bad arguments refused before any Redis
// call.
func TestSemaphoreAcquireRelease(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	c := newClient(t, srv)
	sem := c.Semaphore("gpu", 4)

	p, err := sem.Acquire(ctx, 2)
	require.NoError(t, err)
	require.Equal(t, int64(2), p.Count())
	require.Equal(t, "gpu", p.Name())
	require.NoError(t, p.Context().Err())
	q, err := sem.TryAcquire(p.Context(), 2)
	require.NoError(t, err, "a Permit's Context takes permits of its own")
	require.NotEqual(t, p.Owner(), q.Owner())
	require.Greater(t, q.Token(), p.Token())
	_, err = sem.TryAcquire(ctx, 1)
	require.ErrorIs(t, err, ErrNotObtained, "all 4 held")
	st := inspect(t, sem)
	require.Equal(t, int64(4), st.Size)
	require.Equal(t, int64(4), st.Held)
	require.Equal(t, q.Token(), st.LastToken)
	require.Equal(t, int64(2), st.Holders[p.Owner()].Count)
	require.Positive(t, st.Holders[p.Owner()].TTL)

	require.NoError(t, q.Release(ctx))
	require.ErrorIs(t, q.Release(ctx), ErrNotHeld, "released twice")
	require.ErrorIs(t, q.Context().Err(), context.Canceled)
	require.NoError(t, p.Context().Err(), "p is not q")
	require.Equal(t, int64(2), inspect(t, sem).Held, "a second Release frees nothing")

	before := commandCalls(t, rdb)
	for _, n := range []int64{0, -1, 5} {
		_, err = sem.Acquire(ctx, n)
		require.ErrorIs(t, err, ErrInvalidOption, "n=%d", n)
	}
	_, err = sem.TryAcquire(WithOwner(ctx, "shared"), 1)
	require.ErrorIs(t, err, ErrInvalidOption, "permits are not re-entered: WithOwner is refused")
	_, err = c.Semaphore("gpu", 0).Acquire(ctx, 1)
	require.ErrorIs(t, err, ErrInvalidOption, "size 0")
	require.ErrorIs(t, c.Semaphore("gpu", 4).SetSize(ctx, 0), ErrInvalidOption)
	_, err = c.Semaphore("g{pu", 4).Acquire(ctx, 1)
	require.ErrorIs(t, err, ErrInvalidName)
	after := commandCalls(t, rdb)
	require.Equal(t, before["evalsha"], after["evalsha"], "refused before any Redis call")
	require.Equal(t, before["eval"], after["eval"])

	require.NoError(t, p.Release(ctx))
	requireOnlyFence(t, rdb, "gpu")
}

// The size stored in Redis wins: a handle made with a larger size is
// refused an ask above the stored one, with ErrInvalidOption matching
// reentrant.ErrInvalidPermits, and the refusal writes nothing and sends
// nothing more (no clean-up runs for it).
func TestSemaphoreStoredSizeWins(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	a := newClient(t, srv)
	p, err := a.Semaphore("pool", 2).Acquire(ctx, 1)
	require.NoError(t, err)

	b := newClient(t, srv)
	big := b.Semaphore("pool", 8)
	before := commandCalls(t, rdb)
	_, err = big.Acquire(ctx, 6)
	require.ErrorIs(t, err, ErrInvalidOption)
	require.ErrorIs(t, err, reentrant.ErrInvalidPermits)
	require.NoError(t, b.Close()) // waits for any clean-up
	after := commandCalls(t, rdb)
	require.Equal(t, before["evalsha"]+1, after["evalsha"], "one refused acquire, no clean-up")
	st := inspect(t, a.Semaphore("pool", 2))
	require.Equal(t, int64(2), st.Size, "the first size stays")
	require.Equal(t, int64(1), st.Held)
	require.Zero(t, st.Queued)

	// An ask that fits the stored size is served, whatever the handle's.
	q, err := newClient(t, srv).Semaphore("pool", 8).TryAcquire(ctx, 1)
	require.NoError(t, err)
	require.NoError(t, q.Release(ctx))
	require.NoError(t, p.Release(ctx))
	requireOnlyFence(t, rdb, "pool")
}

// Strict FIFO: a head asking 3 (of 4, with 2 held) is not overtaken by a
// later ask for 1, though 1 is free, nor by a TryAcquire; the release
// admits both together.
func TestSemaphoreStrictFIFO(t *testing.T) {
	ctx, srv := serve(t)
	a, b, c := newClient(t, srv), newClient(t, srv), newClient(t, srv)
	sem := a.Semaphore("fifo", 4)
	held, err := sem.Acquire(ctx, 2)
	require.NoError(t, err)

	q := queueInOrder(ctx, t, srv, "fifo", ask{b.Semaphore("fifo", 4), 3}, ask{c.Semaphore("fifo", 4), 1})
	head, later := q[0], q[1]
	for range 20 {
		_, err = c.Semaphore("fifo", 4).TryAcquire(ctx, 1)
		require.ErrorIs(t, err, ErrNotObtained, "TryAcquire took past the queue")
	}
	requireWaiting(t, later, "the ask for 1 overtook the head")
	require.Equal(t, int64(2), inspect(t, sem).Held)

	require.NoError(t, held.Release(ctx))
	p3, p1 := receivePermit(t, head), receivePermit(t, later)
	require.Less(t, p3.Token(), p1.Token(), "granted in queue order")
	require.Equal(t, int64(4), inspect(t, sem).Held)
	require.NoError(t, p3.Release(ctx))
	require.NoError(t, p1.Release(ctx))
	requireOnlyFence(t, admin(t, srv), "fifo")
}

// fullWithAWaiter starts two Clients on semaphore name, of size 2: sem,
// of the first, holds both permits (held), and an Acquire of 1 by b, the
// second, waits in the queue.
func fullWithAWaiter(ctx context.Context, t *testing.T, srv *redistest.Server, name string) (sem *Semaphore, held *Permit, b *Client, waiting <-chan permitted) {
	t.Helper()
	sem, b = newClient(t, srv).Semaphore(name, 2), newClient(t, srv)
	held, err := sem.Acquire(ctx, 2)
	require.NoError(t, err)
	waiting = acquireInBackground(ctx, b.Semaphore(name, 2), 1)
	waitForSemQueued(t, srv, name, 1)
	return sem, held, b, waiting
}

// Resize: raising the size grants the waiters that then fit, with nobody
// releasing; lowering it takes no permit back and admits nobody until the
// permits held are below the new size.
func TestSemaphoreSetSize(t *testing.T) {
	ctx, srv := serve(t)
	sem, two, b, one := fullWithAWaiter(ctx, t, srv, "resize")

	require.NoError(t, sem.SetSize(ctx, 3))
	p1 := receivePermit(t, one)
	require.Equal(t, int64(3), inspect(t, sem).Size)

	require.NoError(t, b.Semaphore("resize", 2).SetSize(ctx, 1))
	require.NoError(t, two.Context().Err(), "lowering revokes nothing")
	require.NoError(t, p1.Context().Err())
	st := inspect(t, sem)
	require.Equal(t, int64(3), st.Held)
	require.Equal(t, int64(1), st.Size)

	next := acquireInBackground(ctx, b.Semaphore("resize", 2), 1)
	waitForSemQueued(t, srv, "resize", 1)
	require.NoError(t, p1.Release(ctx))
	requireWaiting(t, next, "admitted with 2 held of 1")
	require.NoError(t, two.Release(ctx))
	last := receivePermit(t, next)
	require.NoError(t, last.Release(ctx))
	requireOnlyFence(t, admin(t, srv), "resize")
}

// ForceRelease ends every hold of the semaphore, this client's Permits
// lose their Contexts with ErrLockLost, and the queue is granted; the size
// stays.
func TestSemaphoreForceRelease(t *testing.T) {
	ctx, srv := serve(t)
	sem, p, b, waiting := fullWithAWaiter(ctx, t, srv, "forced")

	n, err := b.Semaphore("forced", 2).ForceRelease(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	got := receivePermit(t, waiting)
	n, err = sem.ForceRelease(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	require.ErrorIs(t, context.Cause(p.Context()), ErrLockLost)
	require.ErrorIs(t, p.Release(ctx), ErrLockLost)
	require.ErrorIs(t, got.Release(ctx), ErrLockLost, "force-released from another client")
	require.Equal(t, int64(2), inspect(t, sem).Size)
	requireOnlyFence(t, admin(t, srv), "forced")
}

// On a wire-mode client every call of a Semaphore is refused with
// ErrWireUnsupported, writing nothing, as for an RWLock.
func TestWireRefusesSemaphore(t *testing.T) {
	ctx, srv := serve(t)
	sem := newWireClient(t, srv, "go-1").Semaphore("pool", 2)
	_, err := sem.Acquire(ctx, 1)
	require.ErrorIs(t, err, ErrWireUnsupported)
	_, err = sem.TryAcquire(ctx, 1)
	require.ErrorIs(t, err, ErrWireUnsupported)
	require.ErrorIs(t, sem.SetSize(ctx, 3), ErrWireUnsupported)
	_, err = sem.ForceRelease(ctx)
	require.ErrorIs(t, err, ErrWireUnsupported)
	_, err = sem.Inspect(ctx)
	require.ErrorIs(t, err, ErrWireUnsupported)
	require.Zero(t, admin(t, srv).DBSize(ctx).Val(), "nothing written")
}

// releaseAs is a release of the semaphore's permits sent as owner with
// token, past any Permit: what another client could forge.
func releaseAs(ctx context.Context, t *testing.T, rdb *redis.Client, name string, n int64, owner string, token uint64) reentrant.ReleaseStatus {
	t.Helper()
	k, err := reentrant.Namespace{}.SharedKeys(reentrant.KindSemaphore, name)
	require.NoError(t, err)
	s, err := k.Permits(n)
	require.NoError(t, err)
	res, err := s.Release(ctx, rdb, owner, token, newRequestID())
	require.NoError(t, err)
	return res.Status
}

// Owned release: a release names the hold by owner and token, so neither
// another client's Permit nor a forged release frees permits it does not
// hold, and no release raises availability above the size.
func TestSemaphoreOwnedRelease(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	a, b := newClient(t, srv), newClient(t, srv)
	sem := a.Semaphore("owned", 3)
	mine, err := sem.Acquire(ctx, 2)
	require.NoError(t, err)
	theirs, err := b.Semaphore("owned", 3).Acquire(ctx, 1)
	require.NoError(t, err)

	require.NoError(t, theirs.Release(ctx))
	require.ErrorIs(t, theirs.Release(ctx), ErrNotHeld)
	require.Equal(t, reentrant.NotHeld, releaseAs(ctx, t, rdb, "owned", 2, theirs.Owner(), mine.Token()))
	require.Equal(t, reentrant.NotHeld, releaseAs(ctx, t, rdb, "owned", 2, mine.Owner(), mine.Token()+1))
	require.Equal(t, reentrant.NotHeld, releaseAs(ctx, t, rdb, "owned", 1, "stranger", mine.Token()))
	st := inspect(t, sem)
	require.Equal(t, int64(2), st.Held, "nobody released mine")
	require.NoError(t, mine.Context().Err())

	// Availability never rises above the size: all 3 at once, then no more.
	require.NoError(t, mine.Release(ctx))
	all, err := sem.TryAcquire(ctx, 3)
	require.NoError(t, err)
	require.Equal(t, reentrant.NotHeld, releaseAs(ctx, t, rdb, "owned", 3, mine.Owner(), mine.Token()))
	_, err = b.Semaphore("owned", 3).TryAcquire(ctx, 1)
	require.ErrorIs(t, err, ErrNotObtained, "a stale release freed nothing")
	require.NoError(t, all.Release(ctx))
	require.Zero(t, inspect(t, sem).Held)
	requireOnlyFence(t, rdb, "owned")
}

// A waiter whose ask a SetSize lowered the size below is refused at its
// next look, with ErrInvalidOption, and its record is gone: it blocks
// nobody behind it.
func TestSemaphoreLoweredBelowAWaitersAsk(t *testing.T) {
	ctx, srv := serve(t)
	a, b := newClient(t, srv), newClient(t, srv, WithWatchdogLease(300*time.Millisecond))
	sem := a.Semaphore("lowered", 2)
	p, err := sem.Acquire(ctx, 1)
	require.NoError(t, err)
	queued := queueInOrder(ctx, t, srv, "lowered", ask{b.Semaphore("lowered", 2), 2}, ask{b.Semaphore("lowered", 2), 1})
	big, small := queued[0], queued[1]

	require.NoError(t, sem.SetSize(ctx, 1))
	r := within(t, big, "the refused waiter went on waiting")
	require.ErrorIs(t, r.err, ErrInvalidOption)
	require.ErrorIs(t, r.err, reentrant.ErrInvalidPermits)
	require.NoError(t, p.Release(ctx))
	q := receivePermit(t, small)
	require.Zero(t, inspect(t, sem).Queued)
	require.NoError(t, q.Release(ctx))
	requireOnlyFence(t, admin(t, srv), "lowered")
}
