package rlock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/reentrant"
	"github.com/batonlock/baton/watchdog"
)

// The hold deadline (issue 16): a holder's Context ends when its lease may
// have run out, measured from the send of its last confirmed acquire or
// renewal, not when Redis says so.

// A holder paused past its lease sees the loss on its very first look after
// it resumes, every time, and its Unlock says ErrLockLost.
func TestPausedHolderSeesTheLossOnItsFirstLook(t *testing.T) {
	ctx, srv := serve(t)
	const lease = 300 * time.Millisecond
	ch := startHolder(t, srv, "pause-check", lease)
	ch.locked()
	other := newClient(t, srv)
	for rep := 0; rep < 20; rep++ {
		ch.signal(syscall.SIGSTOP)
		stopped := time.Now()
		l, err := other.Lock(ctx, "pause-check") // taken while the child sleeps
		require.NoError(t, err, "rep %d", rep)
		time.Sleep(time.Until(stopped.Add(time.Second)))
		ch.signal(syscall.SIGCONT)
		require.Equal(t, "check true true", ch.ask("check"), "rep %d: the first look after the pause", rep)
		require.Contains(t, ch.ask("unlock"), "unlock true ", "rep %d: Unlock of a lost hold", rep)
		require.NoError(t, l.Unlock(ctx))
		ch.ask("relock")
	}
	ch.finish()
}

// Replies held back by the network, requests not: Redis keeps renewing the
// lock, but the holder cannot know it, so its Context ends at its validity
// and not when the replies finally come.
func TestStalledRenewalRepliesEndTheHoldAtItsValidity(t *testing.T) {
	ctx, srv := serve(t)
	px := startProxy(t, srv.Addr)
	const lease = 300 * time.Millisecond
	var lost sync.WaitGroup
	lost.Add(1)
	c, err := New(px.client(t), WithWatchdogLease(lease), WithLostHandler(func(string, error) { lost.Done() }))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	l, err := c.Lock(ctx, "replies")
	require.NoError(t, err)
	time.Sleep(lease / 2) // a renewal or so

	px.HoldReplies()
	time.Sleep(20 * time.Millisecond) // a reply already on its way lands
	validUntil := clockBase.Add(time.Duration(l.hold.validity.until.Load()))
	<-l.Context().Done()
	endedAt := time.Now()
	require.ErrorIs(t, context.Cause(l.Context()), ErrLockLost)
	require.False(t, endedAt.Before(validUntil), "ended before its validity")
	require.Less(t, endedAt.Sub(validUntil), 50*time.Millisecond, "ended late: at a timer or reply, not at its validity")
	lost.Wait() // the lost handler ran, once (a second Done would panic)
	px.ReleaseReplies()
	require.ErrorIs(t, l.Unlock(ctx), ErrLockLost)
}

// The timer logic of the same, in a bubble: a confirmed renewal moves the
// end; without one, the hold ends exactly at its validity, the send of the
// last confirmed renewal plus the lease less the margin, with the lost
// handler run once. And a look at Err after the validity sees the end even
// before any timer has fired.
func TestHoldEndsAtItsValidity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = 3 * time.Second
		var failing atomic.Bool
		var losses []error
		c := &Client{}
		c.cfg.onLost = func(_ string, cause error) { losses = append(losses, cause) }
		wd, err := watchdog.New(watchdog.Config[*hold]{
			Lease: lease, Margin: driftMargin(lease), OnRenewed: extendHold,
			Renew: func(_ context.Context, batch []*hold) []error {
				errs := make([]error, len(batch))
				for i := range errs {
					if failing.Load() {
						errs[i] = errors.New("no reply")
					}
				}
				return errs
			},
		})
		require.NoError(t, err)
		defer wd.Close()
		c.wd = wd
		keys, err := reentrant.Namespace{}.Keys("bubble")
		require.NoError(t, err)
		valid := lease - driftMargin(lease)
		t0 := time.Now()
		h := c.newHold(&plainLock{keys: keys}, "owner", holdGrant{id: 1, token: 1}, t0, lease)
		l := newHandle(h, context.Background(), nil, lockConfig{}, t0, Free)
		require.NoError(t, h.join(l, t0, lease))

		lastSent := t0.Add(lease / 3) // the first tick's renewal is confirmed
		time.Sleep(time.Until(lastSent) + time.Millisecond)
		synctest.Wait()
		failing.Store(true) // and no later one
		time.Sleep(time.Until(t0.Add(valid)) + time.Millisecond)
		synctest.Wait()
		require.NoError(t, (*Lock)(l).Context().Err(), "ended at the first validity, though renewed")

		time.Sleep(time.Until(lastSent.Add(valid)) - time.Nanosecond)
		synctest.Wait()
		require.NoError(t, (*Lock)(l).Context().Err(), "ended before its validity")
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		require.ErrorIs(t, context.Cause((*Lock)(l).Context()), ErrLockLost)
		require.Len(t, losses, 1)

		// A hold whose validity passes with no timer to see it: only the
		// look at Err can, and it must close Done before it answers.
		late := c.newHold(&plainLock{keys: keys}, "late", holdGrant{id: 2, token: 2}, time.Now(), lease)
		ll := newHandle(late, context.Background(), nil, lockConfig{}, time.Now(), Free)
		require.NoError(t, late.join(ll, time.Now(), lease))
		late.validity.timer.Stop()
		late.validity.until.Store(monoOf(time.Now()))
		require.Error(t, (*Lock)(ll).Context().Err())
		select {
		case <-(*Lock)(ll).Context().Done():
		default:
			t.Fatal("Err returned non-nil before Done was closed")
		}
		require.Len(t, losses, 2)
	})
}

// A server stalled past a fixed lease while Lock calls wait: a grant that
// arrives dead is given back, never returned; every Lock returns a live
// lock or an error; nothing is left behind.
func TestStalledServerHandsOutNoDeadLocks(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	const lease = 200 * time.Millisecond
	holder := newClient(t, srv)
	h, err := holder.Lock(ctx, "stall", WithLease(lease))
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var dead, live, failed int
	clients := make([]*Client, 6)
	for i := range clients {
		c, err := New(srv.Client(ctxBound))
		require.NoError(t, err)
		clients[i] = c
		wg.Go(func() {
			lctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			l, err := c.Lock(lctx, "stall", WithLease(lease))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				failed++
			case l.Context().Err() != nil:
				dead++
			default:
				live++
				_ = l.Unlock(ctx)
			}
		})
	}
	time.Sleep(50 * time.Millisecond) // the waiters are queued on the holder
	srv.Pause()
	time.Sleep(2 * lease)
	srv.Resume()
	wg.Wait()
	require.Zero(t, dead, "Lock returned locks whose Context had already ended (%d live, %d failed)", live, failed)
	require.Positive(t, live)
	require.ErrorIs(t, h.Unlock(ctx), ErrLockLost)
	for _, c := range clients {
		require.NoError(t, c.Close())
	}
	require.Eventually(t, func() bool { return rdb.Exists(ctx, lockKey("stall")).Val() == 0 },
		2*lease, 10*time.Millisecond, "a lock left behind after Close")
}

// A healthy watchdog hold, held for ten leases: its Context never ends,
// and it is renewed in time, under load too.
func TestLongHealthyHoldNeverEnds(t *testing.T) {
	ctx, srv := serve(t)
	c := newClient(t, srv, WithWatchdogLease(steadyLease))
	l, err := c.Lock(ctx, "long")
	require.NoError(t, err)
	select {
	case <-l.Context().Done():
		t.Fatalf("a healthy hold ended: %v", context.Cause(l.Context()))
	case <-time.After(10 * time.Second):
	}
	require.NoError(t, l.Context().Err())
	require.Positive(t, c.RenewalStats().Renewed)
	require.NoError(t, l.Unlock(ctx))
}

// Leases at the edges: 1ms, and one shorter than the drift margin, are
// refused with a clear error; a fractional one is taken, with a validity
// no later than Redis's expiry.
func TestLeaseMargins(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	c := newClient(t, srv)
	for _, d := range []time.Duration{time.Millisecond, driftMargin(time.Millisecond), MinLease - time.Nanosecond} {
		_, err := c.Lock(ctx, "edge", WithLease(d))
		require.ErrorIs(t, err, ErrInvalidLease, "%v", d)
		require.ErrorIs(t, err, ErrInvalidOption)
		require.Contains(t, err.Error(), "MinLease")
	}
	_, err := New(srv.Client(), WithWatchdogLease(5*time.Millisecond))
	require.ErrorIs(t, err, ErrInvalidLease)

	const fractional = MinLease + 400*time.Microsecond
	sent := time.Now()
	l, err := c.Lock(ctx, "edge", WithLease(fractional))
	returned := time.Now()
	require.NoError(t, err)
	require.Positive(t, rdb.PTTL(ctx, lockKey("edge")).Val())
	deadline, ok := l.Context().Deadline()
	require.True(t, ok)
	// The acquire was sent between sent and returned, and the validity is
	// that send plus the lease less the drift margin: never later than
	// the lease from the send, however long a loaded machine took to send.
	margin := driftMargin(fractional)
	require.False(t, deadline.After(returned.Add(fractional-margin)), "validity later than the lease less the margin")
	require.False(t, deadline.Before(sent.Add(fractional-margin)), "validity counted from before the send")
	<-l.Context().Done()
	err = l.Unlock(ctx)
	require.True(t, err == nil || errors.Is(err, ErrLockLost), "%v", err)
}
