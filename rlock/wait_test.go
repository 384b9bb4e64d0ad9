package rlock

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/reentrant/redistest"
)

// longLease is far longer than any wake-up the tests accept, so a waiter
// that acquires quickly was woken by pub/sub or the retry, not by the TTL.
const longLease = 30 * time.Second

// fast is the bound for a wake-up that must not wait for the lease.
const fast = 3 * time.Second

func waitForSubscribers(t *testing.T, srv *redistest.Server, channel string, n int64) {
	t.Helper()
	rdb := admin(t, srv)
	require.Eventually(t, func() bool {
		return rdb.PubSubNumSub(context.Background(), channel).Val()[channel] == n
	}, 5*time.Second, 2*time.Millisecond, "subscribers on %s", channel)
}

// Step 3 of the wait loop: a release between the first attempt and the
// subscribe publishes to nobody; only the retry after the confirmed
// subscribe can catch it.
func TestReleaseBetweenAttemptAndSubscribeIsNotLost(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	holder, waiter := newClient(t, srv), newClient(t, srv)
	l, err := holder.Lock(ctx, "lw", WithLease(longLease))
	require.NoError(t, err)
	released := false
	waiter.SetAfterFirstAttempt(func() {
		if !released {
			released = true
			assertNoError(t, l.Unlock(ctx))
		}
	})
	start := time.Now()
	got, err := waiter.Lock(ctx, "lw")
	require.NoError(t, err)
	require.True(t, released, "the hook ran between step 1 and step 2")
	require.Less(t, time.Since(start), fast, "the waiter waited for the lease instead of retrying")
	require.NoError(t, got.Unlock(ctx))
}

// The holder's key vanishes without a PUBLISH (an admin DEL, or expiry):
// the waiter must wake when the holder's PTTL runs out, not later.
func TestWakeAtTTLWhenNoPublishArrives(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	rdb := admin(t, srv)
	holder, waiter := newClient(t, srv), newClient(t, srv)
	const lease = 1500 * time.Millisecond
	_, err := holder.Lock(ctx, "np", WithLease(lease))
	require.NoError(t, err)

	got := lockInBackground(ctx, waiter, "np")
	waitForSubscribers(t, srv, "baton:{np}:released", 1)
	require.NoError(t, rdb.Del(ctx, lockKey("np")).Err()) // no PUBLISH
	select {
	case r := <-got:
		require.NoError(t, r.err)
		require.Less(t, r.took, lease+fast, "waited longer than the holder's TTL")
		require.NoError(t, r.lock.Unlock(ctx))
	case <-time.After(lease + 2*fast):
		t.Fatal("waiter never acquired")
	}
}

type acquired struct {
	lock *Lock
	took time.Duration
	err  error
}

// lockInBackground calls Lock on another goroutine and reports the result
// and how long it took; the test unlocks, so nothing runs after it ends.
func lockInBackground(ctx context.Context, c *Client, name string) <-chan acquired {
	got := make(chan acquired, 1)
	start := time.Now()
	go func() {
		l, err := c.Lock(ctx, name)
		got <- acquired{lock: l, took: time.Since(start), err: err}
	}()
	return got
}

// Killing the shared pub/sub connection mid-wait loses any message sent in
// the gap; the hub's wake-all after resubscribing makes the waiter retry.
func TestPubSubConnectionKilledMidWait(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	rdb := admin(t, srv)
	holder, waiter := newClient(t, srv), newClient(t, srv)
	l, err := holder.Lock(ctx, "k", WithLease(longLease))
	require.NoError(t, err)

	got := lockInBackground(ctx, waiter, "k")
	waitForSubscribers(t, srv, "baton:{k}:released", 1)
	require.NoError(t, rdb.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err())
	require.NoError(t, l.Unlock(ctx)) // likely published into the gap
	select {
	case r := <-got:
		require.NoError(t, r.err)
		require.Less(t, r.took, fast, "waited for the TTL")
		require.NoError(t, r.lock.Unlock(ctx))
	case <-time.After(longLease / 2):
		t.Fatal("waiter was not woken after the pub/sub connection died")
	}
}

// One release wakes one waiter per client, not all of them: 50 waiters in
// one client drain one by one with about one acquire attempt per release.
func TestWakeOnePerRelease(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	rdb := admin(t, srv)
	holder, waiters := newClient(t, srv), newClient(t, srv)
	const n = 50
	l, err := holder.Lock(ctx, "w1", WithLease(longLease))
	require.NoError(t, err)

	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := waiters.Lock(ctx, "w1")
			if assertNoError(t, err) {
				assertNoError(t, got.Unlock(ctx))
			}
		}()
	}
	// Every waiter has made its two failed attempts (steps 1 and 3) and blocks.
	require.Eventually(t, func() bool {
		s, err := redistest.ReadCommandStats(ctx, rdb)
		return err == nil && s["evalsha"]+s["eval"] >= 1+2*n
	}, 10*time.Second, 5*time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	before, err := redistest.ReadCommandStats(ctx, rdb)
	require.NoError(t, err)

	require.NoError(t, l.Unlock(ctx))
	wg.Wait()
	after, err := redistest.ReadCommandStats(ctx, rdb)
	require.NoError(t, err)
	d := after.Sub(before)
	scripts := d["evalsha"] + d["eval"]
	releases := int64(1 + n) // the holder's and each waiter's
	acquires := scripts - releases
	t.Logf("%d releases, %d acquire attempts: %.2f per release", releases, acquires, float64(acquires)/float64(releases))
	require.GreaterOrEqual(t, acquires, int64(n))
	require.LessOrEqual(t, acquires, int64(2*n), "wake-all: each release woke many waiters")
}

// However many locks a client waits on, it uses one pub/sub connection.
func TestOnePubSubConnectionPerClient(t *testing.T) {
	ctx := testCtx(t)
	srv := redistest.Start(t)
	rdb := admin(t, srv)
	holder, waiters := newClient(t, srv), newClient(t, srv)
	const n = 100
	var held []*Lock
	for i := 0; i < n; i++ {
		l, err := holder.Lock(ctx, fmt.Sprintf("m%d", i), WithLease(longLease))
		require.NoError(t, err)
		held = append(held, l)
	}
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = waiters.Lock(wctx, fmt.Sprintf("m%d", i))
		}()
	}
	require.Eventually(t, func() bool {
		return len(rdb.PubSubChannels(ctx, "baton:*").Val()) == n
	}, 10*time.Second, 5*time.Millisecond)
	list, err := rdb.ClientList(ctx).Result()
	require.NoError(t, err)
	pubsubConns := 0
	for _, line := range strings.Split(list, "\n") {
		if strings.Contains(line, " sub=") && !strings.Contains(line, " sub=0 ") {
			pubsubConns++
		}
	}
	require.Equal(t, 1, pubsubConns, "pub/sub connections for %d waiters on %d locks", n, n)
	cancel()
	wg.Wait()
	for _, l := range held {
		require.NoError(t, l.Unlock(ctx))
	}
}
