package rlock

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/batonlock/baton/bench/redistest"
)

// faultLease is the watchdog lease of the holders in these tests: the
// watchdog renews every 167ms, and a holder that stops renewing loses the
// lock within 500ms.
const faultLease = 500 * time.Millisecond

// A holder stopped (SIGSTOP: a GC pause, a VM freeze) for longer than its
// lease cannot renew. The lock must pass to another client once the lease
// it last renewed runs out, with a higher token; the woken holder must
// learn of the loss, and the fenced store must refuse its stale write.
func TestHolderPausedPastItsLease(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	ch := startHolder(t, srv, "paused", faultLease)
	childToken, accepted := ch.locked()
	require.True(t, accepted)
	time.Sleep(faultLease / 2) // at least one renewal

	ch.signal(syscall.SIGSTOP)
	stoppedAt := time.Now()
	time.Sleep(20 * time.Millisecond) // a renewal sent just before the stop has landed
	expiry := expiryOf(t, rdb, lockKey("paused"))

	l, err := newClient(t, srv).Lock(ctx, "paused")
	require.NoError(t, err)
	taken := wallClock(time.Now())
	// Not before the paused holder's lease ran out, and woken by that
	// expiry rather than much later.
	require.False(t, taken.Before(expiry), "taken %v before the paused holder's lease ran out", expiry.Sub(taken))
	require.Less(t, taken.Sub(expiry), 400*time.Millisecond, "not woken at the holder's expiry")
	require.Greater(t, l.Token(), childToken)
	ok, err := fencedWrite(ctx, rdb, "store", l.Token(), "parent")
	require.NoError(t, err)
	require.True(t, ok, "the new holder's write")

	time.Sleep(time.Until(stoppedAt.Add(2 * faultLease)))
	ch.signal(syscall.SIGCONT)
	require.Equal(t, "write false <nil>", ch.ask("write"), "the store took the stale holder's write")
	require.Equal(t, "parent", rdb.HGet(ctx, "store", "value").Val())
	require.Equal(t, "lost true", ch.ask("lost"), "the woken holder's Context ends with ErrLockLost")
	require.Contains(t, ch.ask("unlock"), "unlock true ", "its Unlock returns ErrLockLost")
	holders, err := rdb.HGetAll(ctx, lockKey("paused")).Result()
	require.NoError(t, err)
	require.Equal(t, map[string]string{l.Owner(): "1"}, holders, "the stale holder touched the new hold")
	require.NoError(t, l.Unlock(ctx))
	ch.finish()
}

// A holder killed outright sends nothing more: once the server has closed
// its connections, no renewal of its hold arrives (the lock's PTTL only
// falls), the lock is freed by its lease alone, and a waiter gets it then
// with a higher token. The test judges order, not wall-clock time: PTTL's
// 1ms resolution and a shared machine's pauses make timing judgements flaky.
func TestHolderKilled(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	ch := startHolder(t, srv, "killed", faultLease)
	childToken, _ := ch.locked()
	// A renewal lifts the PTTL back up from the lowest seen so far.
	lowest := rdb.PTTL(ctx, lockKey("killed")).Val()
	require.Eventually(t, func() bool {
		ttl := rdb.PTTL(ctx, lockKey("killed")).Val()
		lowest = min(lowest, ttl)
		return ttl > lowest+faultLease/10
	}, 2*faultLease, 5*time.Millisecond, "the holder renews while alive")

	type result struct {
		l   *Lock
		err error
	}
	got := make(chan result, 1)
	waiter := newClient(t, srv)
	go func() {
		l, err := waiter.Lock(ctx, "killed")
		got <- result{l, err}
	}()
	waitForQueued(t, srv, "killed", 1)

	ch.kill()
	// A renewal the child sent just before it died may still be applied;
	// once the server has seen its connections close, nothing more can.
	ch.awaitDisconnected(ctx, rdb)
	prev := time.Duration(math.MaxInt64)
	for {
		// One snapshot of the lease and the last token: once the waiter
		// has drawn a token, the lease is the waiter's.
		var ttl *redis.DurationCmd
		var fence *redis.StringCmd
		_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			ttl, fence = p.PTTL(ctx, lockKey("killed")), p.Get(ctx, lockKey("killed")+":fence")
			return nil
		})
		require.NoError(t, err)
		if ttl.Val() < 0 || fence.Val() != fmt.Sprint(childToken) {
			break
		}
		require.LessOrEqual(t, ttl.Val(), prev, "a renewal arrived after the holder's connections closed")
		prev = ttl.Val()
		time.Sleep(5 * time.Millisecond)
	}
	r := <-got
	require.NoError(t, r.err)
	require.Greater(t, r.l.Token(), childToken)
	require.NoError(t, r.l.Unlock(ctx))
}

// Redis restarts without persistence while a lock is held and others wait.
// The holder must be told, the waiters must recover and take the lock one
// at a time, and once the clients close no goroutine may be left, stuck in
// a wait or a reconnect.
func TestRedisRestartMidHold(t *testing.T) {
	ignore := []goleak.Option{
		goleak.IgnoreCurrent(),
		// Restart starts a new redis-server, with goroutines to reap it and
		// to copy its stderr; they end with the server at cleanup.
		goleak.IgnoreAnyFunction("github.com/batonlock/baton/bench/redistest/redisproc.(*Server).launch.func1"),
		goleak.IgnoreAnyFunction("os/exec.(*Cmd).writerDescriptor.func1"),
	}
	ctx, srv := serve(t)
	dial := func() *redis.Client {
		return redis.NewClient(redistest.Options(srv.Addr))
	}
	var rdbs []*redis.Client
	var clients []*Client
	open := func() *Client {
		rdb := dial()
		c, err := New(rdb, WithWatchdogLease(faultLease))
		require.NoError(t, err)
		rdbs, clients = append(rdbs, rdb), append(clients, c)
		return c
	}
	holder := open()
	l, err := holder.Lock(ctx, "restart")
	require.NoError(t, err)

	const waiters = 6
	var occupancy, maxOccupancy atomic.Int64
	errs := make(chan error, waiters)
	var wg sync.WaitGroup
	var c *Client
	for i := range waiters {
		if i%2 == 0 {
			c = open() // two waiters per client
		}
		wc := c
		wg.Go(func() {
			wl, err := wc.Lock(ctx, "restart")
			if err == nil {
				if n := occupancy.Add(1); n > maxOccupancy.Load() {
					maxOccupancy.Store(n)
				}
				time.Sleep(5 * time.Millisecond)
				occupancy.Add(-1)
				err = wl.Unlock(ctx)
			}
			errs <- err
		})
	}
	waitForQueued(t, srv, "restart", waiters)

	srv.Restart()
	select {
	case <-l.Context().Done():
		require.ErrorIs(t, context.Cause(l.Context()), ErrLockLost)
	case <-time.After(faultLease + time.Second):
		t.Fatal("the holder was not told of the loss")
	}
	require.ErrorIs(t, l.Unlock(ctx), ErrLockLost)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("waiters stuck after the restart")
	}
	for range waiters {
		require.NoError(t, <-errs, "a waiter did not recover")
	}
	require.EqualValues(t, 1, maxOccupancy.Load(), "two waiters held the lock at once")

	for _, c := range clients {
		require.NoError(t, c.Close())
	}
	for _, rdb := range rdbs {
		require.NoError(t, rdb.Close())
	}
	goleak.VerifyNone(t, ignore...)
}
