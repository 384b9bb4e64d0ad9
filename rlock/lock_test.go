package rlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// 4 clients × 8 goroutines increment a plain Redis counter by hand
// (GET, +1, SET) under one lock. Any overlap loses an update.
func TestMutualExclusion(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	const clients, perClient, total = 4, 8, 2000
	var occupancy, maxOccupancy atomic.Int64
	var next atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		c := newClient(t, srv)
		for g := 0; g < perClient; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= total {
					l, err := c.Lock(ctx, "counter")
					if !assertNoError(t, err) {
						return
					}
					if n := occupancy.Add(1); n > maxOccupancy.Load() {
						maxOccupancy.Store(n)
					}
					v, _ := rdb.Get(ctx, "count").Int()
					err = rdb.Set(ctx, "count", v+1, 0).Err()
					occupancy.Add(-1)
					assertNoError(t, err)
					assertNoError(t, l.Unlock(ctx))
				}
			}()
		}
	}
	wg.Wait()
	got, err := rdb.Get(ctx, "count").Int()
	require.NoError(t, err)
	require.Equal(t, total, got, "lost updates")
	require.EqualValues(t, 1, maxOccupancy.Load(), "two holders at once")
	require.Zero(t, rdb.Exists(ctx, lockKey("counter")).Val())
}

func TestReentrancyDepth3WhileAnotherOwnerWaits(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	c := newClient(t, srv)
	count := func() int64 {
		v, _ := rdb.HGetAll(ctx, lockKey("r")).Result()
		var n int64
		for _, s := range v {
			x, _ := strconv.ParseInt(s, 10, 64)
			n += x
		}
		return n
	}

	l1, err := c.Lock(ctx, "r")
	require.NoError(t, err)
	require.EqualValues(t, 1, count())
	l2, err := c.Lock(l1.Context(), "r")
	require.NoError(t, err)
	l3, err := c.Lock(l2.Context(), "r")
	require.NoError(t, err)
	require.EqualValues(t, 3, count())
	require.Equal(t, l1.Token(), l3.Token(), "re-entry keeps the token")
	require.Equal(t, l1.Owner(), l3.Owner())

	var otherGot atomic.Bool
	otherDone := make(chan *Lock)
	go func() {
		l, err := newClient(t, srv).Lock(ctx, "r")
		assertNoError(t, err)
		otherGot.Store(true)
		otherDone <- l
	}()
	for _, l := range []*Lock{l3, l2} {
		time.Sleep(50 * time.Millisecond) // give the other owner a chance to cheat
		require.NoError(t, l.Unlock(ctx))
		require.False(t, otherGot.Load(), "the other owner got in before the last Unlock")
	}
	require.EqualValues(t, 1, count())
	require.Error(t, l3.Context().Err(), "an unlocked hold's context ends")
	require.NoError(t, l1.Context().Err(), "the outer hold goes on")
	require.NoError(t, l1.Unlock(ctx))
	other := <-otherDone
	require.Greater(t, other.Token(), l1.Token())
	require.NoError(t, other.Unlock(ctx))
}

func TestUnlockByNonOwnerAndAfterLeaseExpiry(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	a, b := newClient(t, srv), newClient(t, srv)

	la, err := a.Lock(ctx, "x", WithLease(100*time.Millisecond))
	require.NoError(t, err)
	<-la.Context().Done()
	require.ErrorIs(t, context.Cause(la.Context()), ErrLockLost, "a fixed lease ends the context at its deadline")

	lb, err := b.Lock(ctx, "x") // waits for the lease to run out
	require.NoError(t, err)
	before, err := rdb.HGetAll(ctx, lockKey("x")).Result()
	require.NoError(t, err)
	ttlBefore := rdb.PTTL(ctx, lockKey("x")).Val()

	require.ErrorIs(t, la.Unlock(ctx), ErrLockLost, "unlock after the lease expired")
	after, err := rdb.HGetAll(ctx, lockKey("x")).Result()
	require.NoError(t, err)
	require.Equal(t, before, after, "the holder's key is untouched")
	require.InDelta(t, ttlBefore, rdb.PTTL(ctx, lockKey("x")).Val(), float64(time.Second))

	require.NoError(t, lb.Unlock(ctx))
	require.ErrorIs(t, lb.Unlock(ctx), ErrNotHeld, "a second Unlock of one handle")

	// A holder whose lock was force-released elsewhere and taken by another
	// owner is a non-owner now: its Unlock must not touch the new holder.
	ly, err := a.Lock(ctx, "y", WithLease(time.Minute))
	require.NoError(t, err)
	_, err = newClient(t, srv).ForceUnlock(ctx, "y")
	require.NoError(t, err)
	lb, err = b.Lock(ctx, "y")
	require.NoError(t, err)
	before, err = rdb.HGetAll(ctx, lockKey("y")).Result()
	require.NoError(t, err)
	require.ErrorIs(t, ly.Unlock(ctx), ErrLockLost)
	after, err = rdb.HGetAll(ctx, lockKey("y")).Result()
	require.NoError(t, err)
	require.Equal(t, before, after)
	require.NoError(t, lb.Unlock(ctx))
}

func TestFencingTokensIncreaseAcrossHolders(t *testing.T) {
	ctx, srv := serve(t)
	clients := []*Client{newClient(t, srv), newClient(t, srv)}
	var last uint64
	for i := 0; i < 100; i++ {
		l, err := clients[i%2].Lock(ctx, "fenced")
		require.NoError(t, err)
		require.Greater(t, l.Token(), last, "holder %d", i)
		last = l.Token()
		inner, err := clients[i%2].Lock(l.Context(), "fenced")
		require.NoError(t, err)
		require.Equal(t, l.Token(), inner.Token())
		require.NoError(t, inner.Unlock(ctx))
		require.NoError(t, l.Unlock(ctx))
	}
}

func TestBadInput(t *testing.T) {
	_, err := New(nil)
	require.ErrorIs(t, err, ErrNilClient)

	srv := redistest.Start(t)
	_, err = New(srv.Client(), WithWatchdogLease(0))
	require.ErrorIs(t, err, ErrInvalidLease)
	require.ErrorIs(t, err, ErrInvalidOption)
	_, err = New(srv.Client(), WithKeyPrefix("a{b}"))
	require.ErrorIs(t, err, ErrInvalidOption)
	_, err = New(srv.Client(), WithRenewBatchSize(0))
	require.ErrorIs(t, err, ErrInvalidOption)
	_, err = New(srv.Client(), WithLivenessTTL(time.Millisecond))
	require.ErrorIs(t, err, ErrInvalidOption)

	c := newClient(t, srv)
	ctx := testCtx(t)
	for _, name := range []string{"", "a{b", "c}", strings.Repeat("n", 1025)} {
		_, err := c.Lock(ctx, name)
		require.ErrorIs(t, err, ErrInvalidName, "%.10q", name)
		_, err = c.TryLock(ctx, name)
		require.ErrorIs(t, err, ErrInvalidName)
		_, err = c.ForceUnlock(ctx, name)
		require.ErrorIs(t, err, ErrInvalidName)
	}
	for _, lease := range []time.Duration{0, -time.Second, time.Microsecond} {
		_, err := c.Lock(ctx, "ok", WithLease(lease))
		require.ErrorIs(t, err, ErrInvalidLease, "%v", lease)
	}
	_, err = c.TryLock(ctx, "ok", WaitAtMost(-time.Second))
	require.ErrorIs(t, err, ErrInvalidOption)
}

func TestTryLockAndWaitAtMost(t *testing.T) {
	ctx, srv := serve(t)
	a, b := newClient(t, srv), newClient(t, srv)
	l, err := a.Lock(ctx, "t")
	require.NoError(t, err)

	_, err = b.TryLock(ctx, "t")
	require.ErrorIs(t, err, ErrNotObtained)

	start := time.Now()
	_, err = b.TryLock(ctx, "t", WaitAtMost(200*time.Millisecond))
	require.ErrorIs(t, err, ErrNotObtained)
	require.NotErrorIs(t, err, context.DeadlineExceeded, "the caller's ctx did not end")
	require.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)

	go func() {
		time.Sleep(100 * time.Millisecond)
		assertNoError(t, l.Unlock(ctx))
	}()
	l2, err := b.TryLock(ctx, "t", WaitAtMost(10*time.Second))
	require.NoError(t, err)
	require.NoError(t, l2.Unlock(ctx))
}

func TestCancelledWaitLeavesNothingBehind(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	a, b := newClient(t, srv), newClient(t, srv)
	l, err := a.Lock(ctx, "c")
	require.NoError(t, err)

	wctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := b.Lock(wctx, "c")
		errc <- err
	}()
	waitForQueued(t, srv, "c", 1)
	cancel()
	select {
	case err := <-errc:
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorIs(t, err, ErrNotObtained)
	case <-time.After(2 * time.Second):
		t.Fatal("Lock did not return promptly after cancel")
	}
	waitForQueued(t, srv, "c", 0) // the subscription is dropped

	dctx, dcancel := context.WithTimeout(ctx, 150*time.Millisecond)
	defer dcancel()
	_, err = b.Lock(dctx, "c")
	require.ErrorIs(t, err, context.DeadlineExceeded)

	require.NoError(t, l.Unlock(ctx))
	require.Zero(t, rdb.Exists(ctx, lockKey("c")).Val(), "no key left behind")
}

func TestUncontendedPathIsOneScriptCall(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	c := newClient(t, srv)
	warm, err := c.Lock(ctx, "warm") // loads the scripts (EVAL on NOSCRIPT)
	require.NoError(t, err)
	require.NoError(t, warm.Unlock(ctx))

	before, err := redistest.ReadCommandStats(ctx, rdb)
	require.NoError(t, err)
	l, err := c.Lock(ctx, "u")
	require.NoError(t, err)
	mid, err := redistest.ReadCommandStats(ctx, rdb)
	require.NoError(t, err)
	require.NoError(t, l.Unlock(ctx))
	after, err := redistest.ReadCommandStats(ctx, rdb)
	require.NoError(t, err)

	lockCmds := mid.Sub(before)
	delete(lockCmds, "info")
	require.Equal(t, redistest.CommandStats{"evalsha": 1}, scriptCallsOnly(lockCmds), "Lock: one EVALSHA, no SUBSCRIBE")
	unlockCmds := after.Sub(mid)
	delete(unlockCmds, "info")
	require.Equal(t, redistest.CommandStats{"evalsha": 1}, scriptCallsOnly(unlockCmds), "Unlock: one EVALSHA")
}

// scriptCallsOnly drops the commands a script runs internally, which
// commandstats also counts, keeping what the client sent.
func scriptCallsOnly(s redistest.CommandStats) redistest.CommandStats {
	out := redistest.CommandStats{}
	for k, v := range s {
		switch k {
		case "evalsha", "eval", "subscribe", "ssubscribe", "ping":
			out[k] = v
		}
	}
	return out
}

func TestForceUnlockCancelsLocalHolder(t *testing.T) {
	ctx, srv := serve(t)
	c := newClient(t, srv)
	l, err := c.Lock(ctx, "f")
	require.NoError(t, err)
	n, err := newClient(t, srv).ForceUnlock(ctx, "f")
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	n, err = c.ForceUnlock(ctx, "f")
	require.NoError(t, err)
	require.Zero(t, n, "already free")
	<-l.Context().Done()
	require.ErrorIs(t, context.Cause(l.Context()), ErrLockLost)
	require.ErrorIs(t, l.Unlock(ctx), ErrLockLost)
}

func TestCloseWakesWaitersAndReleasesHolds(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	holder, c := newClient(t, srv), newClient(t, srv)
	l, err := holder.Lock(ctx, "held")
	require.NoError(t, err)
	mine, err := c.Lock(ctx, "mine")
	require.NoError(t, err)

	errc := make(chan error, 1)
	go func() {
		_, err := c.Lock(ctx, "held")
		errc <- err
	}()
	waitForQueued(t, srv, "held", 1)
	require.NoError(t, c.Close())
	require.ErrorIs(t, <-errc, ErrClosed)
	require.ErrorIs(t, context.Cause(mine.Context()), ErrClosed)
	require.Zero(t, rdb.Exists(ctx, lockKey("mine")).Val(), "Close releases what the client held")
	_, err = c.Lock(ctx, "x")
	require.ErrorIs(t, err, ErrClosed)
	require.NoError(t, c.Close(), "idempotent")
	require.NoError(t, l.Unlock(ctx))
}

func TestOwnersAreNotSharedByAccident(t *testing.T) {
	ctx, srv := serve(t)
	c := newClient(t, srv)
	l, err := c.Lock(ctx, "o")
	require.NoError(t, err)
	_, err = c.TryLock(ctx, "o") // same client, same goroutine, no owner in ctx
	require.ErrorIs(t, err, ErrNotObtained)

	shared := WithOwner(ctx, "job-42")
	s1, err := c.Lock(shared, "s")
	require.NoError(t, err)
	s2, err := newClient(t, srv).TryLock(shared, "s")
	require.NoError(t, err, "an explicit owner is shared across clients")
	require.Equal(t, s1.Token(), s2.Token())
	owner, ok := OwnerFrom(s1.Context())
	require.True(t, ok)
	require.Equal(t, "job-42", owner)
	require.NoError(t, s2.Unlock(ctx))
	require.NoError(t, s1.Unlock(ctx))
	require.NoError(t, l.Unlock(ctx))
	require.True(t, strings.HasPrefix(l.Owner(), c.id+":"))
	require.Len(t, strings.TrimPrefix(l.Owner(), c.id+":"), 32, "128 random bits")
}

func TestErrorsAreDistinct(t *testing.T) {
	all := []error{ErrNotObtained, ErrNotHeld, ErrLockLost, ErrClosed, ErrInvalidName, ErrNilClient}
	for i, a := range all {
		require.True(t, strings.HasPrefix(a.Error(), "rlock: "))
		for j, b := range all {
			require.Equal(t, i == j, errors.Is(a, b), fmt.Sprint(a, b))
		}
	}
}

// A fixed lease that ran out unnoticed must not let its old handle release
// the owner's next hold, which Redis counts under the same owner ID.
func TestExpiredHoldDoesNotReleaseTheOwnersNextHold(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	c := newClient(t, srv)
	job := WithOwner(ctx, "job-7")
	old, err := c.Lock(job, "e", WithLease(100*time.Millisecond))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return rdb.Exists(ctx, lockKey("e")).Val() == 0 },
		5*time.Second, 10*time.Millisecond, "the fixed lease runs out")

	next, err := c.Lock(job, "e", WithLease(longLease))
	require.NoError(t, err)
	require.Greater(t, next.Token(), old.Token())
	require.ErrorIs(t, old.Unlock(ctx), ErrLockLost)
	require.Equal(t, "1", rdb.HGet(ctx, lockKey("e"), "job-7").Val(), "the next hold is intact")
	require.NoError(t, next.Context().Err())
	require.NoError(t, next.Unlock(ctx))
	require.Zero(t, rdb.Exists(ctx, lockKey("e")).Val())
}
