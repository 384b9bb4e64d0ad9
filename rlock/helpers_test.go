package rlock

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/reentrant"
)

// serve is how most tests start: a ctx bounded like the test, and a
// throwaway redis-server.
func serve(t *testing.T) (context.Context, *redistest.Server) {
	t.Helper()
	return testCtx(t), redistest.Start(t)
}

// testCtx bounds a whole test.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newClient returns a Client on its own Redis connection pool, closed at the
// end of the test, like a separate process would have.
func newClient(t *testing.T, srv *redistest.Server, opts ...Option) *Client {
	t.Helper()
	c, err := New(srv.Client(), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// admin is the test's own unrestricted connection, for checks and fault
// injection; under redistest.ACLEnv the clients under test are restricted.
func admin(t *testing.T, srv *redistest.Server) *redis.Client {
	t.Helper()
	return srv.Admin()
}

// steadyLease is the shortest watchdog lease a test may count on keeping
// under the suite's load. A hold's renewal is due a sixth of a lease after
// the send of its last confirmed one, and a tick serves it within a third
// more, so it is confirmed within half a lease plus D, the stall of the
// watchdog's goroutine or of Redis; it must be by the validity, the lease
// less lease/100+2ms. So the lease must exceed (D+2ms)/0.49. The watchdog's
// tick was measured received up to 318ms late on 2 shared cores beside a
// -race busy loop on both: 1s keeps a hold through a stall of 488ms.
const steadyLease = time.Second

// lockKey is the hash key of a lock under the default prefix.
func lockKey(name string) string { return "baton:{" + name + "}" }

func assertNoError(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

// longLease is far longer than any wake-up the tests accept, so a waiter
// that acquires quickly was woken by pub/sub or the retry, not by the TTL.
const longLease = 30 * time.Second

// fast is the bound for a wake-up that must not wait for the lease.
const fast = 3 * time.Second

// waitForQueued waits until n calls wait in the queue of lock name.
func waitForQueued(t *testing.T, srv *redistest.Server, name string, n int64) {
	t.Helper()
	waitForQueueLen(t, srv, lockKey(name), n)
}

// waitForQueueLen waits until n calls wait in the queue of the resource
// whose hash is key.
func waitForQueueLen(t *testing.T, srv *redistest.Server, key string, n int64) {
	t.Helper()
	rdb := admin(t, srv)
	require.Eventually(t, func() bool {
		return rdb.LLen(context.Background(), key+":queue").Val() == n
	}, 5*time.Second, 2*time.Millisecond, "waiters queued on %s", key)
}

// within is the next value from ch, failing with what after fast.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	return withinBy(t, ch, time.Now().Add(fast), what)
}

// withinBy is within, failing at deadline.
func withinBy[T any](t *testing.T, ch <-chan T, deadline time.Time, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Until(deadline)):
		t.Fatal(what)
		var zero T
		return zero
	}
}

type acquired struct {
	lock *Lock
	took time.Duration
	at   time.Time // when the call returned
	err  error
}

// lockInBackground calls Lock on another goroutine and reports the result
// and how long it took; the test unlocks, so nothing runs after it ends.
func lockInBackground(ctx context.Context, c *Client, name string) <-chan acquired {
	got := make(chan acquired, 1)
	start := time.Now()
	go func() {
		l, err := c.Lock(ctx, name)
		got <- acquired{lock: l, took: time.Since(start), at: time.Now(), err: err}
	}()
	return got
}

// receive returns a background Lock's result, failing after fast.
func receive(t *testing.T, res <-chan acquired) *Lock {
	t.Helper()
	return receiveBy(t, res, time.Now().Add(fast)).lock
}

// receiveBy returns a background Lock's result, which must be a hold,
// failing at deadline.
func receiveBy(t *testing.T, res <-chan acquired, deadline time.Time) acquired {
	t.Helper()
	r := withinBy(t, res, deadline, "the waiter did not get the lock")
	require.NoError(t, r.err)
	return r
}

// lockKeys are the keys of the plain lock called name.
func (c *Client) lockKeys(name string) (reentrant.Keys, error) {
	p, err := c.plainLock(name)
	if err != nil {
		return reentrant.Keys{}, err
	}
	return p.keys, nil
}

// arrivals records the order in which Lock calls made in the background
// got their lock.
type arrivals struct {
	wg  sync.WaitGroup
	mu  sync.Mutex
	got []int
}

// lockInTurn calls c.Lock for name in the background; once it has the
// lock, it records i and unlocks.
func (a *arrivals) lockInTurn(ctx context.Context, t *testing.T, c *Client, name string, i int) {
	a.wg.Go(func() {
		l, err := c.Lock(ctx, name)
		if !assertNoError(t, err) {
			return
		}
		a.mu.Lock()
		a.got = append(a.got, i)
		a.mu.Unlock()
		assertNoError(t, l.Unlock(ctx))
	})
}

// order waits for every call, and returns the order they got the lock in.
func (a *arrivals) order() []int {
	a.wg.Wait()
	return a.got
}
