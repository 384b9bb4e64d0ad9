package rlock

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// Step 3 of the wait loop: a release between the first attempt and the
// subscribe publishes to nobody; only the retry after the confirmed
// subscribe can catch it.
func TestReleaseBetweenAttemptAndSubscribeIsNotLost(t *testing.T) {
	ctx, srv := serve(t)
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
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	holder, waiter := newClient(t, srv), newClient(t, srv)
	const lease = 1500 * time.Millisecond
	_, err := holder.Lock(ctx, "np", WithLease(lease))
	require.NoError(t, err)

	got := lockInBackground(ctx, waiter, "np")
	waitForQueued(t, srv, "np", 1)
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

// Killing the shared pub/sub connection mid-wait loses any message sent in
// the gap; the hub's wake-all after resubscribing makes the waiter retry.
func TestPubSubConnectionKilledMidWait(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	holder, waiter := newClient(t, srv), newClient(t, srv)
	l, err := holder.Lock(ctx, "k", WithLease(longLease))
	require.NoError(t, err)

	got := lockInBackground(ctx, waiter, "k")
	waitForQueued(t, srv, "k", 1)
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

// The baton pass: a release hands the lock to the next waiter, whose Lock
// returns on the grant message with no further script. 50 queued waiters
// in one client drain with one script per release and nothing more: no
// waiter retries, none races.
func TestReleaseHandsOffWithNoRetry(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	holder, waiters := newClient(t, srv), newClient(t, srv)
	const n = 50
	warm, err := holder.Lock(ctx, "warm") // the release script is loaded: no NOSCRIPT below
	require.NoError(t, err)
	require.NoError(t, warm.Unlock(ctx))
	l, err := holder.Lock(ctx, "w1", WithLease(longLease))
	require.NoError(t, err)

	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Go(func() {
			got, err := waiters.Lock(ctx, "w1")
			if assertNoError(t, err) {
				assertNoError(t, got.Unlock(ctx))
			}
		})
	}
	waitForQueued(t, srv, "w1", n)
	before, err := redistest.ReadCommandStats(ctx, rdb)
	require.NoError(t, err)

	require.NoError(t, l.Unlock(ctx))
	wg.Wait()
	after, err := redistest.ReadCommandStats(ctx, rdb)
	require.NoError(t, err)
	d := after.Sub(before)
	scripts := d["evalsha"] + d["eval"]
	t.Logf("%d releases, %d scripts, %d grants published", 1+n, scripts, d["publish"])
	require.EqualValues(t, 1+n, scripts, "one release per hand-off, and no waiter ran a script")
	require.EqualValues(t, n, d["publish"], "one grant per waiter")
}

// However many locks a client waits on, it uses one pub/sub connection.
func TestOnePubSubConnectionPerClient(t *testing.T) {
	ctx, srv := serve(t)
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
	for i := 0; i < n; i++ {
		waitForQueued(t, srv, fmt.Sprintf("m%d", i), 1)
	}
	require.Len(t, rdb.PubSubChannels(ctx, "baton:*").Val(), 1, "one grant channel for every lock")
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
