package rlock

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// Attacks on the hold model (issue 9). Each one gave two holders, a leaked
// lock or a wrong error before the hold became one object.

// A partial release must never leave the lock with less lease than a
// remaining handle expects: an inner fixed lease inside a watchdog hold.
func TestNestedFixedLeaseUnlockKeepsTheOuterLease(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	c := newClient(t, srv)
	o, err := c.Lock(ctx, "n1")
	require.NoError(t, err)
	i, err := c.Lock(o.Context(), "n1", WithLease(100*time.Millisecond))
	require.NoError(t, err)
	require.NoError(t, i.Unlock(ctx))
	require.Greater(t, rdb.PTTL(ctx, lockKey("n1")).Val(), time.Second, "the inner unlock shortened the outer lease")
	time.Sleep(400 * time.Millisecond)
	_, err = newClient(t, srv).TryLock(ctx, "n1")
	require.ErrorIs(t, err, ErrNotObtained, "another owner got the lock while the outer hold lived")
	require.NoError(t, o.Context().Err())
	require.NoError(t, o.Unlock(ctx))
}

// The reverse: a watchdog handle inside a fixed 5 s hold, with a short
// watchdog lease. Neither its renewals nor its unlock shorten the 5 s.
func TestNestedWatchdogUnlockKeepsTheOuterFixedLease(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	c := newClient(t, srv, WithWatchdogLease(500*time.Millisecond))
	o, err := c.Lock(ctx, "n2", WithLease(5*time.Second))
	require.NoError(t, err)
	i, err := c.Lock(o.Context(), "n2")
	require.NoError(t, err)
	time.Sleep(400 * time.Millisecond) // renewals of the inner handle ran
	require.NoError(t, i.Unlock(ctx))
	require.Greater(t, rdb.PTTL(ctx, lockKey("n2")).Val(), 3*time.Second, "the outer fixed lease was shortened")
	require.NoError(t, o.Unlock(ctx))
}

// A watchdog re-entry into a fixed hold keeps the hold alive past the fixed
// lease for as long as that handle lives. Both Contexts end at the fixed
// deadline (the inner one derives from the outer), but the hold is renewed.
func TestWatchdogReentryIntoAFixedHoldIsRenewed(t *testing.T) {
	ctx, srv := serve(t)
	c := newClient(t, srv, WithWatchdogLease(300*time.Millisecond))
	o, err := c.Lock(ctx, "n3", WithLease(200*time.Millisecond))
	require.NoError(t, err)
	i, err := c.Lock(o.Context(), "n3")
	require.NoError(t, err)
	time.Sleep(900 * time.Millisecond)
	_, err = newClient(t, srv).TryLock(ctx, "n3")
	require.ErrorIs(t, err, ErrNotObtained, "the watchdog handle was not renewed")
	require.ErrorIs(t, context.Cause(o.Context()), ErrLockLost, "the fixed handle outlived its own lease")
	require.NoError(t, i.Unlock(ctx))
	require.NoError(t, o.Unlock(ctx), "the hold still lives, so the fixed handle leaves it cleanly")
}

// A fractional-millisecond lease: the holder's Context must have ended by
// the time another owner can take the lock.
func TestFractionalLeaseNeverOutlivesRedis(t *testing.T) {
	ctx, srv := serve(t)
	c, other := newClient(t, srv), newClient(t, srv)
	for run := 0; run < 20; run++ {
		l, err := c.Lock(ctx, "frac", WithLease(40*time.Millisecond+950*time.Microsecond))
		require.NoError(t, err)
		for {
			taken, err := other.TryLock(ctx, "frac", WithLease(time.Second))
			if errors.Is(err, ErrNotObtained) {
				continue
			}
			require.NoError(t, err)
			require.Error(t, l.Context().Err(), "run %d: two holders: the old Context outlived Redis's lease", run)
			require.NoError(t, taken.Unlock(ctx))
			break
		}
		require.ErrorIs(t, l.Unlock(ctx), ErrLockLost)
	}
}

// Goroutines forked from one lock's Context take turns: each re-enters,
// but never two at once. Nested calls through the innermost handle never
// wait.
func TestForkedGoroutinesTakeTurns(t *testing.T) {
	ctx, srv := serve(t)
	c := newClient(t, srv)
	l, err := c.Lock(ctx, "fork")
	require.NoError(t, err)
	gctx, cancel := context.WithCancel(l.Context())
	defer cancel()
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 5 {
				g, err := c.Lock(gctx, "fork")
				if !assertNoError(t, err) {
					return
				}
				if n := inside.Add(1); n > most.Load() {
					most.Store(n)
				}
				// Nested calls through the innermost handle re-enter at once.
				deeper, err := c.TryLock(g.Context(), "fork")
				assertNoError(t, err)
				time.Sleep(2 * time.Millisecond)
				inside.Add(-1)
				assertNoError(t, deeper.Unlock(ctx))
				assertNoError(t, g.Unlock(ctx))
			}
		})
	}
	wg.Wait()
	require.EqualValues(t, 1, most.Load(), "goroutines forked from one Context held the lock together")
	// A re-entry through a handle whose child is held waits, and gives up
	// with its ctx, sending nothing.
	child, err := c.Lock(l.Context(), "fork")
	require.NoError(t, err)
	short, stop := context.WithTimeout(l.Context(), 50*time.Millisecond)
	defer stop()
	_, err = c.Lock(short, "fork")
	require.ErrorIs(t, err, ErrNotObtained)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	// The turn it never had is not given back: the next re-entry through l
	// still waits for child.
	again, stop2 := context.WithTimeout(l.Context(), 50*time.Millisecond)
	defer stop2()
	_, err = c.Lock(again, "fork")
	require.ErrorIs(t, err, context.DeadlineExceeded, "a re-entry overtook the held child")
	require.NoError(t, child.Unlock(ctx))
	require.NoError(t, l.Unlock(ctx))
}

// Unlock with a ctx that is already cancelled still releases: the deferred
// Unlock of a cancelled request must not leak the lock.
func TestUnlockWithCancelledCtxReleases(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	c := newClient(t, srv)
	req, cancel := context.WithCancel(ctx)
	l, err := c.Lock(req, "cancelled")
	require.NoError(t, err)
	cancel()
	require.NoError(t, l.Unlock(req))
	require.Zero(t, rdb.Exists(ctx, lockKey("cancelled")).Val(), "the lock leaked")
	require.Zero(t, c.wd.Len(), "a released hold is still renewed")
}

// A final Unlock whose release fails is never renewed again: the lease
// bounds it. A retry of the Unlock replays the first attempt.
func TestFailedFinalUnlockIsNeverRenewed(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	p := startProxy(t, srv.Addr)
	const lease = 300 * time.Millisecond
	c, err := New(p.client(t, func(o *redis.Options) { o.MaxRetries = -1 }), WithWatchdogLease(lease))
	require.NoError(t, err)
	defer c.Close()
	l, err := c.Lock(ctx, "unrenewed")
	require.NoError(t, err)
	p.DropNextReply(isScript("release"), true) // the release runs; its reply is lost
	require.Error(t, l.Unlock(ctx))
	require.Zero(t, c.wd.Len(), "the hold is still watched after its last Unlock")
	time.Sleep(lease) // renewals would have run
	require.NoError(t, l.Unlock(ctx), "the retry replays the release that ran")
	require.Zero(t, rdb.Exists(ctx, lockKey("unrenewed")).Val())
}

// ForceUnlock ends only the holds it deleted: a hold taken right after the
// delete, in the same client, keeps its Context and releases cleanly.
func TestForceUnlockSparesTheNextHold(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	c := newClient(t, srv)
	for run := 0; run < 40; run++ {
		first, err := c.Lock(ctx, "force", WithLease(longLease))
		require.NoError(t, err)
		got := make(chan *Lock, 3)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					l, err := c.TryLock(ctx, "force", WithLease(longLease))
					if err == nil {
						got <- l
						return
					}
				}
			})
		}
		_, err = c.ForceUnlock(ctx, "force")
		require.NoError(t, err)
		next := <-got
		close(stop)
		wg.Wait()
		require.ErrorIs(t, first.Unlock(ctx), ErrLockLost)
		require.NoError(t, next.Context().Err(), "run %d: ForceUnlock ended a hold taken after it", run)
		require.NoError(t, next.Unlock(ctx), "run %d", run)
		require.Zero(t, rdb.Exists(ctx, lockKey("force")).Val(), "run %d: the next hold was left behind", run)
	}
}

// A ForceUnlock from another client is a loss, not a missing hold: Unlock
// returns ErrLockLost, every handle ends with it, and the lost handler runs
// once for the hold.
func TestForeignForceUnlockIsALoss(t *testing.T) {
	ctx, srv := serve(t)
	var losses atomic.Int32
	a := newClient(t, srv, WithLostHandler(func(string, error) { losses.Add(1) }))
	l, err := a.Lock(ctx, "foreign")
	require.NoError(t, err)
	inner, err := a.Lock(l.Context(), "foreign")
	require.NoError(t, err)
	_, err = newClient(t, srv).ForceUnlock(ctx, "foreign")
	require.NoError(t, err)
	err = inner.Unlock(ctx)
	require.ErrorIs(t, err, ErrLockLost)
	require.NotErrorIs(t, err, ErrNotHeld)
	require.ErrorIs(t, context.Cause(l.Context()), ErrLockLost)
	require.ErrorIs(t, l.Unlock(ctx), ErrLockLost)
	require.ErrorIs(t, l.Unlock(ctx), ErrNotHeld, "a second Unlock of one handle")
	require.EqualValues(t, 1, losses.Load(), "the lost handler runs once per hold")
}

// A clean Unlock is never reported as a loss, even with renewals racing
// the release: the lost handler hears of no loss but those the holds'
// Unlocks return. Each goroutine has a lock of its own, so that every
// report is paired with its hold's Unlock, and 16 holds race their
// renewals at once.
//
// A loss that does happen is not this test's concern, and under load it
// does: a hold's renewal is due a sixth of a lease after the send of its
// last confirmed one, and a tick serves it within a third more, so a
// stall of the watchdog (or of Redis) of more than about half a lease
// loses the hold for real; ticks 318ms late were measured on 2 shared
// cores under the suite's -race load. Its Unlock then says ErrLockLost,
// and the report is paired with it. The 150ms lease keeps renewals, every
// 50ms, racing the releases of 10–50ms holds.
func TestCleanUnlockIsNeverReportedLost(t *testing.T) {
	ctx, srv := serve(t)
	const goroutines = 16
	var mu sync.Mutex
	reported := make(map[string]int, goroutines) // losses heard of, by lock
	c := newClient(t, srv, WithWatchdogLease(150*time.Millisecond),
		WithLostHandler(func(name string, _ error) {
			mu.Lock()
			defer mu.Unlock()
			reported[name]++
		}))
	deadline := time.Now().Add(2 * time.Second)
	var clean atomic.Int32
	lost := make(map[string]int, goroutines) // Unlocks that returned ErrLockLost, by lock
	var wg sync.WaitGroup
	for g := range goroutines {
		name := fmt.Sprintf("clean-%d", g)
		wg.Go(func() {
			for time.Now().Before(deadline) {
				l, err := c.Lock(ctx, name)
				if !assertNoError(t, err) {
					return
				}
				time.Sleep(time.Duration(10+(g*7)%40) * time.Millisecond)
				switch err := l.Unlock(ctx); {
				case err == nil:
					clean.Add(1)
				case errors.Is(err, ErrLockLost):
					mu.Lock()
					lost[name]++
					mu.Unlock()
				default:
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	require.Positive(t, clean.Load())
	require.Positive(t, c.RenewalStats().Renewed, "no renewal raced a release")
	// A loss the watchdog finds is reported on its goroutine, maybe after
	// the Unlock that found the hold ended has returned.
	paired := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return maps.Equal(reported, lost)
	}
	for end := time.Now().Add(5 * time.Second); !paired() && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, lost, reported,
		"losses reported, by lock (actual), against Unlocks that returned ErrLockLost (expected), beside %d clean ones", clean.Load())
	t.Logf("%d clean unlocks; real losses, by lock: %v", clean.Load(), lost)
}

// A typed nil client is a nil client, whatever its type.
func TestNewRejectsTypedNilAndUnsupportedClients(t *testing.T) {
	for name, rdb := range map[string]redis.UniversalClient{
		"*redis.Client":        (*redis.Client)(nil),
		"*redis.ClusterClient": (*redis.ClusterClient)(nil),
		"*redis.Ring":          (*redis.Ring)(nil),
	} {
		t.Run(name, func(t *testing.T) {
			c, err := New(rdb)
			require.ErrorIs(t, err, ErrNilClient)
			require.Nil(t, c)
		})
	}
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	defer ring.Close()
	_, err := New(ring)
	require.ErrorIs(t, err, ErrUnsupportedClient)
}
