package watchdog_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/watchdog"
)

// The tests run in synctest bubbles, where these are exact.
const (
	lease = 3 * time.Second
	tick  = lease / 3
)

var errTransient = errors.New("dial tcp: connection refused")

// fakeRenew is a RenewFunc that records every call and answers through
// answer, or renews every item when answer is nil.
type fakeRenew struct {
	answer func(ctx context.Context, batch []string) []error

	mu    sync.Mutex
	calls []call
}

type call struct {
	at    time.Time
	items []string
}

func (f *fakeRenew) renew(ctx context.Context, batch []string) []error {
	f.mu.Lock()
	f.calls = append(f.calls, call{time.Now(), slices.Clone(batch)})
	f.mu.Unlock()
	if f.answer == nil {
		return make([]error, len(batch))
	}
	return f.answer(ctx, batch)
}

func (f *fakeRenew) recorded() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// callsWith returns the times of the calls that included item.
func (f *fakeRenew) callsWith(item string) []time.Time {
	var at []time.Time
	for _, c := range f.recorded() {
		if slices.Contains(c.items, item) {
			at = append(at, c.at)
		}
	}
	return at
}

// answerEach answers every item of a batch with fn(item).
func answerEach(fn func(item string) error) func(context.Context, []string) []error {
	return func(_ context.Context, batch []string) []error {
		errs := make([]error, len(batch))
		for i, item := range batch {
			errs[i] = fn(item)
		}
		return errs
	}
}

func newScheduler(t *testing.T, f *fakeRenew, batchSize int) *watchdog.Scheduler[string] {
	t.Helper()
	s, err := watchdog.New(watchdog.Config[string]{Lease: lease, BatchSize: batchSize, Renew: f.renew})
	require.NoError(t, err)
	return s
}

// watched is a lease with a record of its onLost calls.
type watched struct {
	*watchdog.Lease

	mu    sync.Mutex
	at    time.Time
	cause error
	calls int
}

func watch(t *testing.T, s *watchdog.Scheduler[string], item string, validFrom time.Time) *watched {
	t.Helper()
	w := &watched{}
	l, err := s.Watch(item, validFrom, w.onLost)
	require.NoError(t, err)
	w.Lease = l
	return w
}

func (w *watched) onLost(cause error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.at, w.cause = time.Now(), cause
	w.calls++
}

// loss returns when onLost was last called, how many times, and with what.
func (w *watched) loss() (time.Time, int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.at, w.calls, w.cause
}

func (w *watched) requireLive(t *testing.T) {
	t.Helper()
	_, n, cause := w.loss()
	require.Zero(t, n, "onLost called with %v", cause)
}

func (w *watched) requireLostAt(t *testing.T, at time.Time, target error) {
	t.Helper()
	when, n, cause := w.loss()
	require.Equal(t, 1, n, "onLost calls")
	require.Equal(t, at, when, "loss time")
	require.ErrorIs(t, cause, target)
}

// sleepUntil advances the bubble's clock to at and lets every goroutine
// settle.
func sleepUntil(at time.Time) {
	time.Sleep(time.Until(at))
	synctest.Wait()
}
