package watchdog_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/watchdog"
)

func TestLeaseWatchedJustBeforeTickWaitsForNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeRenew{}
		s := newScheduler(t, f, 0)
		defer s.Close()
		t0 := time.Now()
		watch(t, s, "early", t0)
		sleepUntil(t0.Add(tick * 4 / 10))
		watch(t, s, "older than half a tick", time.Now())
		sleepUntil(t0.Add(tick * 6 / 10))
		watch(t, s, "younger than half a tick", time.Now())

		sleepUntil(t0.Add(2 * tick))

		require.Equal(t, []call{
			{t0.Add(tick), []string{"early", "older than half a tick"}},
			{t0.Add(2 * tick), []string{"younger than half a tick", "early", "older than half a tick"}},
		}, f.recorded())
	})
}

func TestDueLeasesSentEarliestDeadlineFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Each call takes 0.3 tick, so a round of one-item batches reaches
		// only three before its one-tick timeout cuts the fourth.
		f := &fakeRenew{answer: func(ctx context.Context, batch []string) []error {
			select {
			case <-time.After(tick * 3 / 10):
				return make([]error, len(batch))
			case <-ctx.Done():
				return []error{ctx.Err()}
			}
		}}
		s := newScheduler(t, f, 1)
		defer s.Close()
		t0 := time.Now()
		for _, item := range []string{"b", "d", "a", "c"} {
			age := time.Duration(item[0]-'a') * 10 * time.Millisecond // d is oldest
			watch(t, s, item, t0.Add(-age))
		}

		sleepUntil(t0.Add(3 * tick))

		var order []string
		for _, c := range f.recorded() {
			order = append(order, c.items...)
		}
		// "a", cut from the first round, leads the second; "b", renewed 0.4
		// tick before the second round, leads the third.
		require.Equal(t, []string{"d", "c", "b", "a", "a", "d", "c", "b"}, order)
		require.Equal(t, t0.Add(3*tick), f.recorded()[7].at)
	})
}

func TestSuccessAnsweredAtDeadlineDoesNotRevive(t *testing.T) {
	// The answer and the deadline fall on the same instant, so which the
	// scheduler sees first varies: repeat to meet both orders.
	for range 20 {
		synctest.Test(t, func(t *testing.T) {
			t0 := time.Now()
			f := &fakeRenew{answer: func(ctx context.Context, batch []string) []error {
				if time.Now().Equal(t0.Add(tick)) {
					return []error{errTransient}
				}
				<-ctx.Done() // the call sent at 2 ticks answers at 3: the deadline
				return make([]error, len(batch))
			}}
			s := newScheduler(t, f, 0)
			defer s.Close()
			w := watch(t, s, "a", t0)

			sleepUntil(t0.Add(lease + tick))

			w.requireLostAt(t, t0.Add(lease), watchdog.ErrExpired)
			require.Zero(t, s.Len())
		})
	}
}

// A lease whose taking command was sent half a tick or more before Watch
// (a slow acquire: a lost reply and a resend) is due already: it is
// renewed at once, not a tick later, so its first renewal still comes
// within 1.5 ticks of that send, and a lost renewal reply leaves a round
// to renew it before its deadline.
func TestLeaseAlreadyDueWhenWatchedIsRenewedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeRenew{}
		s := newScheduler(t, f, 0)
		defer s.Close()
		t0 := time.Now()
		sleepUntil(t0.Add(tick / 20)) // just after a tick
		watched := time.Now()
		watch(t, s, "slow acquire", watched.Add(-tick*9/10))
		watch(t, s, "fast acquire", watched)
		synctest.Wait()

		sleepUntil(t0.Add(tick))

		require.Equal(t, []call{
			{watched, []string{"slow acquire"}},
			{t0.Add(tick), []string{"slow acquire", "fast acquire"}},
		}, f.recorded())
	})
}

// RenewNow renews every live lease at once, due or not, and a lease the
// store no longer has is lost then, not at its next due round.
func TestRenewNowRenewsEveryLeaseAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeRenew{answer: answerEach(func(item string) error {
			if item == "gone" {
				return watchdog.ErrNotHeld
			}
			return nil
		})}
		s := newScheduler(t, f, 0)
		defer s.Close()
		t0 := time.Now()
		watch(t, s, "kept", t0)
		gone := watch(t, s, "gone", t0)
		sleepUntil(t0.Add(tick / 10))

		s.RenewNow()
		synctest.Wait()

		calls := f.recorded()
		require.Len(t, calls, 1, "one round, at once")
		require.Equal(t, t0.Add(tick/10), calls[0].at)
		require.ElementsMatch(t, []string{"kept", "gone"}, calls[0].items, "both, neither due yet")
		gone.requireLostAt(t, t0.Add(tick/10), watchdog.ErrNotHeld)
	})
}
