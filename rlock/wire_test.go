package rlock

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// wireNames are names with '{' nowhere, at the start and in the middle.
var wireNames = []string{"orders", "{acct}lock", "lock{acct}"}

// newWireClient is a Client in Redisson's format with Java's instance ID,
// on the unrestricted user: Redisson's keys are not under "baton:", so
// ACLRules do not cover them (ACLRedissonRules do).
func newWireClient(t *testing.T, srv *redistest.Server, clientID string, opts ...Option) *Client {
	t.Helper()
	c, err := New(srv.Admin(), append([]Option{WithRedissonWire(clientID)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestWireOptionRejectsABadClientID(t *testing.T) {
	_, srv := serve(t)
	_, err := New(srv.Client(), WithRedissonWire("a:b"))
	require.ErrorIs(t, err, ErrInvalidOption)
}

// A Go hold is a field "<clientID>:<owner>" of the raw name's hash with the
// hold count, and a Java client sees it held; Token is 0 in wire mode.
func TestWireFormatAndToken(t *testing.T) {
	ctx, srv := serve(t)
	adm := admin(t, srv)
	j := newJavaClient(t, adm)
	c := newWireClient(t, srv, "go-1")
	for _, name := range wireNames {
		l, err := c.Lock(ctx, name)
		require.NoError(t, err)
		require.Zero(t, l.Token(), "no fencing in wire mode")
		require.Equal(t, map[string]string{"go-1:" + l.Owner(): "1"}, adm.HGetAll(ctx, name).Val())
		require.InDelta(t, DefaultWatchdogLease, adm.PTTL(ctx, name).Val(), float64(time.Second))
		ok, pttl := j.tryAcquire(ctx, name, 1, time.Minute)
		require.False(t, ok)
		require.Greater(t, pttl, 20*time.Second)
		require.NoError(t, l.Unlock(ctx))
		require.Zero(t, adm.Exists(ctx, name).Val())
	}
}

// WithKeyPrefix goes before the name as a Java NameMapper adding it would;
// there is no default prefix.
func TestWireKeyPrefix(t *testing.T) {
	ctx, srv := serve(t)
	adm := admin(t, srv)
	c := newWireClient(t, srv, "go-1", WithKeyPrefix("app:"))
	l, err := c.Lock(ctx, "orders")
	require.NoError(t, err)
	require.EqualValues(t, 1, adm.Exists(ctx, "app:orders").Val())
	ok, _ := newJavaClient(t, adm).tryAcquire(ctx, "app:orders", 1, time.Minute)
	require.False(t, ok)
	require.NoError(t, l.Unlock(ctx))
}

// Go and Java holders never overlap, whoever takes the lock.
func TestWireMutualExclusion(t *testing.T) {
	ctx, srv := serve(t)
	j := newJavaClient(t, admin(t, srv))
	c := newWireClient(t, srv, "go-1")
	var inside, overlaps atomic.Int32
	critical := func() {
		if inside.Add(1) != 1 {
			overlaps.Add(1)
		}
		time.Sleep(time.Millisecond)
		inside.Add(-1)
	}
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range 15 {
				l, err := c.Lock(ctx, "orders")
				if !assertNoError(t, err) {
					return
				}
				critical()
				assertNoError(t, l.Unlock(ctx))
			}
		}()
		go func() {
			defer wg.Done()
			for i := range 15 {
				if !assertNoError(t, j.lock(ctx, "orders", g+1, time.Minute)) {
					return
				}
				critical()
				require.EqualValues(t, 1, j.unlock(ctx, "orders", g+1, time.Minute, fmt.Sprintf("j%d-%d", g, i)))
			}
		}()
	}
	wg.Wait()
	require.Zero(t, overlaps.Load())
}

// A Go waiter wakes on Java's unlock message, long before the lease would
// have freed the lock; and a Java waiter on Go's. The wake-up latency is
// logged (p50 over the rounds), not asserted.
func TestWireCrossWakeUp(t *testing.T) {
	ctx, srv := serve(t)
	adm := admin(t, srv)
	j := newJavaClient(t, adm)
	c := newWireClient(t, srv, "go-1")
	var lat []time.Duration
	for round := range 10 {
		ok, _ := j.tryAcquire(ctx, "orders", 1, time.Minute)
		require.True(t, ok)
		got := make(chan time.Time, 1)
		go func() {
			l, err := c.Lock(ctx, "orders", WaitAtMost(20*time.Second))
			if assertNoError(t, err) {
				got <- time.Now()
				assertNoError(t, l.Unlock(ctx))
			}
			close(got)
		}()
		awaitSubscribers(t, adm, javaChannel("orders"), 1)
		sent := time.Now()
		require.EqualValues(t, 1, j.unlock(ctx, "orders", 1, time.Minute, "u"+string(rune('a'+round))))
		at, ok := <-got
		require.True(t, ok)
		require.Less(t, at.Sub(sent), 10*time.Second, "woken by the message, not the minute's lease")
		lat = append(lat, at.Sub(sent))
		<-got
	}
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	t.Logf("Java unlock → Go waiter in: p50 %v (max %v) over %d rounds, loopback", lat[len(lat)/2], lat[len(lat)-1], len(lat))

	l, err := c.Lock(ctx, "orders", WithLease(time.Minute))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- j.lock(ctx, "orders", 1, time.Minute) }()
	awaitSubscribers(t, adm, javaChannel("orders"), 1)
	require.NoError(t, l.Unlock(ctx))
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the Java waiter was not woken by Go's unlock")
	}
}

// awaitSubscribers waits until channel has n subscribers.
func awaitSubscribers(t *testing.T, adm *redis.Client, channel string, n int64) {
	t.Helper()
	require.Eventually(t, func() bool {
		return adm.PubSubNumSub(context.Background(), channel).Val()[channel] == n
	}, 10*time.Second, time.Millisecond)
}

// A Go re-entry is a second count on the same field, which the Java side
// sees; a Go owner given Java's thread ID and instance ID shares the Java
// thread's hold; a partial unlock publishes nothing.
func TestWireReentrySeenFromJava(t *testing.T) {
	ctx, srv := serve(t)
	adm := admin(t, srv)
	j := newJavaClient(t, adm)
	c := newWireClient(t, srv, javaUUID)
	ps := adm.Subscribe(ctx, javaChannel("orders"))
	defer ps.Close()
	_, err := ps.Receive(ctx)
	require.NoError(t, err)

	require.NoError(t, j.lock(ctx, "orders", 7, time.Minute))
	l, err := c.Lock(WithOwner(ctx, "7"), "orders")
	require.NoError(t, err, "the Java thread's owner re-enters its hold")
	inner, err := c.Lock(l.Context(), "orders")
	require.NoError(t, err)
	require.Equal(t, map[string]string{j.field(7): "3"}, adm.HGetAll(ctx, "orders").Val())
	require.NoError(t, inner.Unlock(ctx))
	require.EqualValues(t, 0, j.unlock(ctx, "orders", 7, time.Minute, "j1"), "Java's partial unlock")
	require.Equal(t, map[string]string{j.field(7): "1"}, adm.HGetAll(ctx, "orders").Val())
	require.NoError(t, l.Unlock(ctx))
	require.Zero(t, adm.Exists(ctx, "orders").Val())
	msg, err := ps.ReceiveMessage(ctx)
	require.NoError(t, err)
	require.Equal(t, "0", msg.Payload, "one message: the final unlock's")
}

// The watchdog keeps a Go hold alive with Redisson's renewal; when Java
// force-unlocks it, the holder is told ErrLockLost at the next renewal.
func TestWireWatchdogAndForceUnlockFromJava(t *testing.T) {
	ctx, srv := serve(t)
	adm := admin(t, srv)
	j := newJavaClient(t, adm)
	c := newWireClient(t, srv, "go-1", WithWatchdogLease(300*time.Millisecond))
	l, err := c.Lock(ctx, "orders")
	require.NoError(t, err)
	time.Sleep(time.Second)
	require.NoError(t, l.Context().Err(), "renewed past three leases")
	require.EqualValues(t, 1, adm.Exists(ctx, "orders").Val())
	require.True(t, j.forceUnlock(ctx, "orders"))
	select {
	case <-l.Context().Done():
		require.ErrorIs(t, context.Cause(l.Context()), ErrLockLost)
	case <-time.After(5 * time.Second):
		t.Fatal("the holder was not told of the force-unlock")
	}
	require.ErrorIs(t, l.Unlock(ctx), ErrLockLost)
}

// A holder whose lock Java force-unlocked must not re-enter it: the
// re-entry would take the freed lock afresh, and hide the loss from the
// outer hold until its next renewal.
func TestWireReentryAfterForceUnlockFails(t *testing.T) {
	ctx, srv := serve(t)
	adm := admin(t, srv)
	j := newJavaClient(t, adm)
	c := newWireClient(t, srv, "go-1")
	l, err := c.Lock(ctx, "orders")
	require.NoError(t, err)
	require.True(t, j.forceUnlock(ctx, "orders"))
	_, err = c.Lock(l.Context(), "orders")
	require.ErrorIs(t, err, ErrNotObtained)
	require.ErrorIs(t, context.Cause(l.Context()), ErrLockLost)
	require.Zero(t, adm.Exists(ctx, "orders").Val(), "the lost holder took nothing")
}

// ForceUnlock from the Go side wakes a Java waiter, and its own holder is
// told.
func TestWireForceUnlockFromGo(t *testing.T) {
	ctx, srv := serve(t)
	j := newJavaClient(t, admin(t, srv))
	c := newWireClient(t, srv, "go-1")
	l, err := c.Lock(ctx, "orders", WithLease(time.Minute))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- j.lock(ctx, "orders", 1, time.Minute) }()
	awaitSubscribers(t, admin(t, srv), javaChannel("orders"), 1)
	n, err := c.ForceUnlock(ctx, "orders")
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.ErrorIs(t, context.Cause(l.Context()), ErrLockLost)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the Java waiter was not woken")
	}
}

// Within a process only the head of the local line contends with Redis:
// one unlock message makes one retry, not one per waiter.
func TestWireWaitersQueueLocally(t *testing.T) {
	ctx, srv := serve(t)
	adm := admin(t, srv)
	j := newJavaClient(t, adm)
	c := newWireClient(t, srv, "go-1")
	warm, err := c.Lock(ctx, "orders") // loads the scripts: every later call is an EVALSHA
	require.NoError(t, err)
	require.NoError(t, warm.Unlock(ctx))
	ok, _ := j.tryAcquire(ctx, "orders", 1, time.Minute)
	require.True(t, ok)
	const waiters = 5
	start := evalshaCalls(t, adm)
	got := make(chan *Lock, waiters)
	for range waiters {
		go func() {
			l, err := c.Lock(ctx, "orders", WaitAtMost(30*time.Second))
			if assertNoError(t, err) {
				got <- l
			}
		}()
	}
	require.Eventually(t, func() bool {
		c.wire.lines.mu.Lock()
		defer c.wire.lines.mu.Unlock()
		l := c.wire.lines.lines["orders"]
		return l != nil && len(l.queue) == waiters
	}, 10*time.Second, time.Millisecond)
	// Each waiter's first try, and the head's look once subscribed.
	require.Eventually(t, func() bool { return evalshaCalls(t, adm)-start == waiters+1 }, 10*time.Second, time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	before := evalshaCalls(t, adm)
	require.EqualValues(t, waiters+1, before-start, "the others wait behind the head without looking")
	require.EqualValues(t, 1, j.unlock(ctx, "orders", 1, time.Minute, "u1"))
	first := <-got
	// The head's retry, and the next head's look once it left the line.
	require.Eventually(t, func() bool { return evalshaCalls(t, adm)-before >= 2 }, 5*time.Second, time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	require.LessOrEqual(t, evalshaCalls(t, adm)-before, int64(2), "no herd: one retry per wake-up")
	require.NoError(t, first.Unlock(ctx))
	for range waiters - 1 {
		require.NoError(t, (<-got).Unlock(ctx))
	}
}

func evalshaCalls(t *testing.T, adm *redis.Client) int64 {
	st, err := redistest.ReadCommandStats(context.Background(), adm)
	require.NoError(t, err)
	return st["evalsha"]
}

// A wire-mode holder killed outright (SIGKILL) publishes nothing: the
// waiter, a Java client here, gets the lock when the lease frees it, and
// not before.
func TestWireHolderKilled(t *testing.T) {
	ctx, srv := serve(t)
	adm := admin(t, srv)
	lease := 2 * time.Second
	ch := startHolder(t, srv, "killed", lease, helperWire+"=child-1")
	ch.locked()
	require.Len(t, adm.HGetAll(ctx, "killed").Val(), 1)
	ps := adm.Subscribe(ctx, javaChannel("killed"))
	defer ps.Close()
	_, err := ps.Receive(ctx)
	require.NoError(t, err)

	ch.kill()
	ch.awaitDisconnected(ctx, adm)
	left := adm.PTTL(ctx, "killed").Val()
	killedAt := time.Now()
	require.NoError(t, newJavaClient(t, adm).lock(ctx, "killed", 1, time.Minute))
	require.GreaterOrEqual(t, time.Since(killedAt), left-5*time.Millisecond, "in at the expiry, not before")
	_, err = ps.ReceiveTimeout(ctx, 10*time.Millisecond)
	require.Error(t, err, "nobody published an unlock")
}

// Redisson's read-write lock format is not covered: on a wire-mode client
// every call of an RWLock is refused with ErrWireUnsupported, and writes
// nothing, rather than take a lock in baton's format that a Java
// RReadWriteLock of the same name would not exclude.
func TestWireRefusesRWLock(t *testing.T) {
	ctx, srv := serve(t)
	adm := admin(t, srv)
	rw := newWireClient(t, srv, "go-1").RWLock("orders")
	_, err := rw.Lock(ctx)
	require.ErrorIs(t, err, ErrWireUnsupported)
	_, err = rw.RLock(ctx)
	require.ErrorIs(t, err, ErrWireUnsupported)
	_, err = rw.TryLock(ctx)
	require.ErrorIs(t, err, ErrWireUnsupported)
	_, err = rw.TryRLock(ctx)
	require.ErrorIs(t, err, ErrWireUnsupported)
	_, err = rw.ForceUnlock(ctx)
	require.ErrorIs(t, err, ErrWireUnsupported)
	_, err = rw.Inspect(ctx)
	require.ErrorIs(t, err, ErrWireUnsupported)
	require.Zero(t, adm.DBSize(ctx).Val(), "nothing written")
}
