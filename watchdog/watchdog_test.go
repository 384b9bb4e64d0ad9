package watchdog_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/watchdog"
)

func TestNewRejectsBadConfig(t *testing.T) {
	renew := func(context.Context, []string) []error { return nil }
	for name, cfg := range map[string]watchdog.Config[string]{
		"zero lease":      {Renew: renew},
		"negative lease":  {Lease: -time.Second, Renew: renew},
		"lease too short": {Lease: 2, Renew: renew},
		"negative batch":  {Lease: lease, BatchSize: -1, Renew: renew},
		"margin = lease":  {Lease: lease, Margin: lease, Renew: renew},
		"negative margin": {Lease: lease, Margin: -1, Renew: renew},
		"nil renew":       {Lease: lease},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := watchdog.New(cfg)
			require.ErrorIs(t, err, watchdog.ErrInvalidConfig)
			require.Nil(t, s)
		})
	}
}

func TestRenewsEveryTickInBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeRenew{}
		s := newScheduler(t, f, 1000)
		defer s.Close()
		t0 := time.Now()
		leases := make([]*watched, 2500)
		for i := range leases {
			leases[i] = watch(t, s, fmt.Sprint(i), t0)
		}

		sleepUntil(t0.Add(3 * tick))

		calls := f.recorded()
		require.Len(t, calls, 9)
		for k := range 3 {
			seen := map[string]bool{}
			for i, c := range calls[3*k : 3*k+3] {
				assert.Equal(t, t0.Add(time.Duration(k+1)*tick), c.at, "tick %d call %d", k+1, i)
				assert.Len(t, c.items, []int{1000, 1000, 500}[i])
				for _, item := range c.items {
					seen[item] = true
				}
			}
			assert.Len(t, seen, 2500, "distinct items renewed at tick %d", k+1)
		}
		for _, l := range leases {
			require.Equal(t, t0.Add(3*tick+lease), l.Deadline())
		}
		require.Equal(t, watchdog.Stats{Ticks: 3, RenewCalls: 9, Renewed: 7500}, s.Stats())
	})
}

func TestTransientErrorsRetriedUntilDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeRenew{}
		s := newScheduler(t, f, 0)
		defer s.Close()
		t0 := time.Now()
		f.answer = answerEach(func(item string) error {
			if item == "flaky" && time.Now().Equal(t0.Add(2*tick)) {
				time.Sleep(tick / 4) // the new deadline counts from the send, not the answer
				return nil
			}
			return errTransient
		})
		down := watch(t, s, "down", t0)
		flaky := watch(t, s, "flaky", t0)

		// Never renewed: lost at validFrom+lease.
		sleepUntil(t0.Add(lease - 1))
		down.requireLive(t)
		sleepUntil(t0.Add(lease))
		down.requireLostAt(t, t0.Add(lease), watchdog.ErrExpired)
		_, _, cause := down.loss()
		require.ErrorIs(t, cause, errTransient, "the last renew error stays visible")
		require.Equal(t, []time.Time{t0.Add(tick), t0.Add(2 * tick)}, f.callsWith("down"))

		// Renewed once at 2 ticks: lost at that send time + lease.
		renewedAt := t0.Add(2 * tick)
		require.Equal(t, renewedAt.Add(lease), flaky.Deadline())
		sleepUntil(renewedAt.Add(lease - 1))
		flaky.requireLive(t)
		sleepUntil(renewedAt.Add(lease))
		flaky.requireLostAt(t, renewedAt.Add(lease), watchdog.ErrExpired)
		require.Equal(t, []time.Time{t0.Add(tick), t0.Add(2 * tick), t0.Add(3 * tick), t0.Add(4 * tick)},
			f.callsWith("flaky"))
		require.Zero(t, s.Len())
	})
}

func TestWrongResultCountIsTransient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeRenew{answer: func(context.Context, []string) []error { return nil }}
		s := newScheduler(t, f, 0)
		defer s.Close()
		t0 := time.Now()
		w := watch(t, s, "a", t0)

		sleepUntil(t0.Add(lease))

		w.requireLostAt(t, t0.Add(lease), watchdog.ErrExpired)
		_, _, cause := w.loss()
		require.ErrorContains(t, cause, "renew returned 0 results for 1 items")
		require.Len(t, f.recorded(), 2)
	})
}

func TestNotHeldLosesOnlyThatItemAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeRenew{answer: answerEach(func(item string) error {
			if item == "b" {
				return fmt.Errorf("renew %s: %w", item, watchdog.ErrNotHeld)
			}
			return nil
		})}
		s := newScheduler(t, f, 0)
		defer s.Close()
		t0 := time.Now()
		a, b, c := watch(t, s, "a", t0), watch(t, s, "b", t0), watch(t, s, "c", t0)

		sleepUntil(t0.Add(2 * tick))

		b.requireLostAt(t, t0.Add(tick), watchdog.ErrNotHeld)
		require.False(t, b.Stop(), "already lost")
		a.requireLive(t)
		c.requireLive(t)
		require.Equal(t, []time.Time{t0.Add(tick)}, f.callsWith("b"))
		require.Equal(t, []time.Time{t0.Add(tick), t0.Add(2 * tick)}, f.callsWith("a"))
		require.Equal(t, 2, s.Len())
		require.Equal(t, uint64(1), s.Stats().Lost)
	})
}

func TestHangingRenewStillLosesAtDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var timeouts []time.Duration
		var ctxErrs []error
		inFlight := 0
		f := &fakeRenew{answer: func(ctx context.Context, batch []string) []error {
			mu.Lock()
			inFlight++
			deadline, _ := ctx.Deadline()
			timeouts = append(timeouts, time.Until(deadline))
			mu.Unlock()
			<-ctx.Done()
			mu.Lock()
			defer mu.Unlock()
			inFlight--
			ctxErrs = append(ctxErrs, ctx.Err())
			return answerEach(func(string) error { return ctx.Err() })(ctx, batch)
		}}
		s := newScheduler(t, f, 0)
		defer s.Close()
		t0 := time.Now()
		// Due when watched, so sent at once; the deadline falls in the
		// middle of the third call.
		w := watch(t, s, "a", t0.Add(-tick/2))

		sleepUntil(t0.Add(2*tick + tick/2))

		w.requireLostAt(t, t0.Add(2*tick+tick/2), watchdog.ErrExpired)
		_, _, cause := w.loss()
		require.ErrorIs(t, cause, context.DeadlineExceeded, "the second call's timeout is the last error")
		mu.Lock()
		require.Equal(t, 1, inFlight, "loss did not wait for the hanging call")
		mu.Unlock()

		sleepUntil(t0.Add(4 * tick))
		require.Equal(t, []time.Time{t0, t0.Add(tick), t0.Add(2 * tick)}, f.callsWith("a"))
		require.Equal(t, []time.Duration{tick, tick, tick}, timeouts)
		require.Equal(t, []error{context.DeadlineExceeded, context.DeadlineExceeded, context.DeadlineExceeded}, ctxErrs)
	})
}

func TestStopDuringInFlightRenew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		f := &fakeRenew{answer: func(_ context.Context, batch []string) []error {
			<-release
			return []error{watchdog.ErrNotHeld}
		}}
		s := newScheduler(t, f, 1) // a and b go in two batches of the same round
		defer s.Close()
		t0 := time.Now()
		a, b := watch(t, s, "a", t0), watch(t, s, "b", t0)
		sleepUntil(t0.Add(tick))
		require.Len(t, f.recorded(), 1, "first batch in flight")

		require.True(t, a.Stop())
		require.True(t, b.Stop())
		require.False(t, a.Stop(), "idempotent")
		close(release)
		sleepUntil(t0.Add(5 * tick))

		a.requireLive(t)
		b.requireLive(t)
		require.Len(t, f.recorded(), 1, "no batch formed after Stop")
		require.Zero(t, s.Len())
		require.Zero(t, s.Stats().Lost)
	})
}

func TestStopThenWatchAnother(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeRenew{}
		s := newScheduler(t, f, 0)
		defer s.Close()
		t0 := time.Now()
		a := watch(t, s, "a", t0)
		sleepUntil(t0.Add(tick + tick/10))

		require.True(t, a.Stop())
		require.False(t, a.Stop())
		b := watch(t, s, "b", time.Now())
		sleepUntil(t0.Add(lease + lease))

		require.Equal(t, []time.Time{t0.Add(tick)}, f.callsWith("a"))
		require.Equal(t, []time.Time{t0.Add(2 * tick), t0.Add(3 * tick), t0.Add(4 * tick), t0.Add(5 * tick), t0.Add(6 * tick)},
			f.callsWith("b"))
		a.requireLive(t)
		b.requireLive(t)
		require.Equal(t, 1, s.Len())
	})
}

func TestCloseCancelsInFlightAndSilencesLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ctxErr error
		f := &fakeRenew{answer: func(ctx context.Context, batch []string) []error {
			<-ctx.Done()
			ctxErr = ctx.Err() // read after Close, which waits for this call
			return answerEach(func(string) error { return watchdog.ErrNotHeld })(ctx, batch)
		}}
		s := newScheduler(t, f, 0)
		t0 := time.Now()
		w := watch(t, s, "a", t0)
		sleepUntil(t0.Add(tick + tick/10))

		require.NoError(t, s.Close())
		require.ErrorIs(t, ctxErr, context.Canceled)
		sleepUntil(t0.Add(2 * lease))

		w.requireLive(t)
		require.False(t, w.Stop())
		require.Zero(t, s.Len())
		_, err := s.Watch("b", time.Now(), nil)
		require.ErrorIs(t, err, watchdog.ErrClosed)
		require.NoError(t, s.Close())
		require.Len(t, f.recorded(), 1)
	})
}

func TestEarlierDeadlineWakesScheduler(t *testing.T) {
	for name, age := range map[string]time.Duration{
		"deadline ahead":  lease - tick/2,
		"deadline passed": lease + tick,
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeRenew{answer: answerEach(func(string) error { return errTransient })}
				s := newScheduler(t, f, 0)
				defer s.Close()
				t0 := time.Now()
				watch(t, s, "later", t0)
				synctest.Wait() // the expiry timer is now armed for "later"
				w := watch(t, s, "earlier", t0.Add(-age))

				sleepUntil(t0.Add(tick))

				w.requireLostAt(t, t0.Add(max(lease-age, 0)), watchdog.ErrExpired)
			})
		})
	}
}

func TestGoroutinesDoNotGrowWithLeases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		most := 0
		record := func() {
			mu.Lock()
			defer mu.Unlock()
			most = max(most, schedulerGoroutines())
		}
		f := &fakeRenew{answer: func(ctx context.Context, batch []string) []error {
			record()
			return answerEach(func(string) error { return errTransient })(ctx, batch)
		}}
		s := newScheduler(t, f, 0)
		defer s.Close()
		synctest.Wait()
		require.Equal(t, 1, schedulerGoroutines(), "after New")
		t0 := time.Now()
		var losses atomic.Int32
		onLost := func(error) {
			if losses.Add(1)%100 == 1 { // a stack dump per loss would be slow
				record()
			}
		}
		for i := range 1000 {
			_, err := s.Watch(fmt.Sprint(i), t0, onLost)
			require.NoError(t, err)
		}
		require.Equal(t, 1, schedulerGoroutines(), "after Watch")

		sleepUntil(t0.Add(lease)) // renewals fail, then all 1000 expire at once

		require.Equal(t, uint64(1000), s.Stats().Lost)
		require.Equal(t, 2, most, "the scheduler and one renewal round")
		require.Equal(t, 1, schedulerGoroutines(), "at rest")
	})
}

// schedulerGoroutines counts the goroutines running the scheduler's code.
// runtime.NumGoroutine would also count the test framework's, which come
// and go.
func schedulerGoroutines() int {
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	n := 0
	for _, g := range strings.Split(stacks, "\n\n") {
		if strings.Contains(g, "watchdog.(*Scheduler[") {
			n++
		}
	}
	return n
}

// With a margin, a lease is lost Margin before sent+Lease, and every
// confirmed renewal is reported with its new deadline, measured from the
// send, not the answer.
func TestMarginAndRenewalReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const margin = 100 * time.Millisecond
		const rtt = 50 * time.Millisecond
		failing := atomic.Bool{}
		renew := func(ctx context.Context, batch []string) []error {
			time.Sleep(rtt)
			errs := make([]error, len(batch))
			for i := range errs {
				if failing.Load() {
					errs[i] = errTransient
				}
			}
			return errs
		}
		var mu sync.Mutex
		var deadlines []time.Time
		var rounds []watchdog.Round
		s, err := watchdog.New(watchdog.Config[string]{
			Lease: lease, Margin: margin, Renew: renew,
			OnRenewed: func(item string, d time.Time) {
				mu.Lock()
				defer mu.Unlock()
				deadlines = append(deadlines, d)
			},
			OnRound: func(r watchdog.Round) {
				mu.Lock()
				defer mu.Unlock()
				rounds = append(rounds, r)
			},
		})
		require.NoError(t, err)
		defer s.Close()
		t0 := time.Now()
		w := watch(t, s, "a", t0)
		require.Equal(t, t0.Add(lease-margin), w.Deadline())

		sleepUntil(t0.Add(tick + rtt))
		mu.Lock()
		require.Equal(t, []time.Time{t0.Add(tick + lease - margin)}, deadlines, "deadline counts from the send")
		require.Equal(t, []watchdog.Round{{Leases: 1, Duration: rtt}}, rounds)
		mu.Unlock()

		failing.Store(true) // from the second tick on, the lease is never renewed again
		lastSent := t0.Add(tick)
		sleepUntil(lastSent.Add(lease - margin))
		w.requireLostAt(t, lastSent.Add(lease-margin), watchdog.ErrExpired)
		mu.Lock()
		require.Equal(t, watchdog.Round{Leases: 1, Failed: 1, Duration: rtt}, rounds[1])
		require.Len(t, deadlines, 1)
		mu.Unlock()
	})
}
