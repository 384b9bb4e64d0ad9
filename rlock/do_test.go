package rlock

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

func TestDoRunsUnderTheLockAndAlwaysUnlocks(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	c := newClient(t, srv)
	errWork := errors.New("work failed")
	err := c.Do(ctx, "do", func(lctx context.Context) error {
		l, ok := FromContext(lctx)
		require.True(t, ok)
		require.Equal(t, "1", rdb.HGet(ctx, lockKey("do"), l.Owner()).Val(), "fn runs under the lock")
		return errWork
	})
	require.ErrorIs(t, err, errWork)
	require.NotErrorIs(t, err, ErrLockLost)
	require.Zero(t, rdb.Exists(ctx, lockKey("do")).Val(), "Do unlocked")

	require.PanicsWithValue(t, "boom", func() {
		_ = c.Do(ctx, "do", func(context.Context) error { panic("boom") })
	})
	require.Zero(t, rdb.Exists(ctx, lockKey("do")).Val(), "Do unlocked before the panic went on")

	held, err := newClient(t, srv).Lock(ctx, "do")
	require.NoError(t, err)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	ran := false
	err = c.Do(short, "do", func(context.Context) error { ran = true; return nil })
	require.ErrorIs(t, err, ErrNotObtained)
	require.False(t, ran, "fn ran without the lock")
	require.NoError(t, held.Unlock(ctx))
}

// A lock lost while fn runs: fn sees its Context end, and Do's error
// matches both fn's error and ErrLockLost.
func TestDoReportsALossDuringFn(t *testing.T) {
	ctx, srv := serve(t)
	c, other := newClient(t, srv), newClient(t, srv)
	err := c.Do(ctx, "do-lost", func(lctx context.Context) error {
		if _, err := other.ForceUnlock(ctx, "do-lost"); err != nil {
			return err
		}
		<-lctx.Done()
		return lctx.Err()
	})
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, ErrLockLost)
}

// fn's ctx ends when the caller's ctx ends, with its cause, and reports
// the caller's deadline, while the hold's own Context stays until Do
// unlocks; FromContext finds the Lock in it, and a Lock with it re-enters.
func TestDoFnCtxEndsWithTheCallersCtx(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	c := newClient(t, srv)
	caller, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	errStop := errors.New("caller stopped")
	err := c.Do(caller, "do-caller", func(fctx context.Context) error {
		l, ok := FromContext(fctx)
		require.True(t, ok)
		want, _ := ctx.Deadline()
		got, ok := fctx.Deadline()
		require.True(t, ok)
		require.Equal(t, want, got, "fn's ctx does not report the caller's deadline")
		inner, err := c.TryLock(fctx, "do-caller")
		require.NoError(t, err, "a Lock with fn's ctx did not re-enter")
		cancel(errStop)
		require.ErrorIs(t, fctx.Err(), context.Canceled)
		within(t, fctx.Done(), "fn's ctx to end")
		require.ErrorIs(t, context.Cause(fctx), errStop)
		require.NoError(t, l.Context().Err(), "the caller's ctx ended the hold's Context")
		require.NoError(t, inner.Context().Err())
		require.NoError(t, inner.Unlock(ctx))
		return fctx.Err()
	})
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, ErrLockLost)
	require.Zero(t, rdb.Exists(ctx, lockKey("do-caller")).Val(), "Do unlocked")
}

func TestObserverSeesEveryEvent(t *testing.T) {
	ctx, srv := serve(t)
	var mu sync.Mutex
	var events []string
	record := func(e string) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}
	renewed := make(chan RenewalRound, 16)
	c := newClient(t, srv, WithWatchdogLease(steadyLease), WithObserver(Observer{
		WaitStarted: func(w WaitStart) { record("wait " + w.Name) },
		WaitEnded:   func(w WaitEnd) { record("waited " + w.Name + " " + w.Outcome.String()) },
		Acquired:    func(a Acquire) { record("acquired " + a.Name + " " + a.Kind.String()) },
		Released:    func(r ReleaseInfo) { record("released " + r.Name) },
		Renewed: func(r RenewalRound) {
			select {
			case renewed <- r:
			default:
			}
		},
		Lost: func(l Loss) { record("lost " + l.Name) },
	}))
	holder := newClient(t, srv)
	h, err := holder.Lock(ctx, "obs")
	require.NoError(t, err)
	// The release comes once the call waits, however late either runs: a
	// hand-off every time.
	got := make(chan *Lock, 1)
	go func() {
		l, err := c.Lock(ctx, "obs")
		assertNoError(t, err)
		got <- l
	}()
	waitForQueued(t, srv, "obs", 1)
	require.NoError(t, h.Unlock(ctx))
	l := <-got
	require.NotNil(t, l)
	inner, err := c.Lock(l.Context(), "obs")
	require.NoError(t, err)
	require.Positive(t, (<-renewed).Leases)
	require.NoError(t, inner.Unlock(ctx))
	_, err = holder.ForceUnlock(ctx, "obs")
	require.NoError(t, err)
	require.ErrorIs(t, l.Unlock(ctx), ErrLockLost)
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	h, err = holder.Lock(ctx, "obs")
	require.NoError(t, err)
	_, err = c.Lock(short, "obs")
	require.ErrorIs(t, err, ErrNotObtained)
	_, err = c.TryLock(ctx, "obs", WaitAtMost(10*time.Millisecond))
	require.ErrorIs(t, err, ErrNotObtained)
	require.NoError(t, h.Unlock(ctx))
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{
		"wait obs", "waited obs acquired", "acquired obs handed off",
		"acquired obs reentered", "released obs",
		"lost obs",
		"wait obs", "waited obs cancelled",
		"wait obs", "waited obs timed out",
	}, events)
}

// With no observer and no logger, observing costs no allocation.
func TestNoObserverCostsNoAllocation(t *testing.T) {
	c := &Client{}
	a := &attempt{c: c}
	l := &handle{}
	wait := func() (*handle, error) { return l, nil }
	require.Zero(t, testing.AllocsPerRun(100, func() {
		_, _ = c.observed(l, nil)
		_, _ = a.observeWait(wait)
	}))
}

// BenchmarkLockUnlockObserver compares an uncontended Lock+Unlock with no
// observer, with an empty one, and with every event observed: the first
// two allocate the same.
func BenchmarkLockUnlockObserver(b *testing.B) {
	srv := redistest.Start(b)
	count := func(Acquire) {}
	for _, bc := range []struct {
		name string
		opts []Option
	}{
		{"none", nil},
		{"empty", []Option{WithObserver(Observer{})}},
		{"acquired", []Option{WithObserver(Observer{Acquired: count})}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c, err := New(srv.Client(), bc.opts...)
			require.NoError(b, err)
			defer c.Close()
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				l, err := c.Lock(ctx, "bench")
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Unlock(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// WithLogger logs a wait longer than WithSlowWait at Debug, and a shorter
// one not at all.
func TestSlowWaitIsLoggedAtDebug(t *testing.T) {
	ctx, srv := serve(t)
	var mu sync.Mutex
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&syncWriter{w: &logs, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := newClient(t, srv, WithLogger(logger), WithSlowWait(300*time.Millisecond))
	holder := newClient(t, srv)
	for _, hold := range []time.Duration{0, 500 * time.Millisecond} {
		h, err := holder.Lock(ctx, "slow")
		require.NoError(t, err)
		go func() {
			time.Sleep(hold)
			_ = h.Unlock(ctx)
		}()
		l, err := c.Lock(ctx, "slow")
		require.NoError(t, err)
		require.NoError(t, l.Unlock(ctx))
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 1, strings.Count(logs.String(), "baton: slow wait"), "logs: %s", logs.String())
	require.Contains(t, logs.String(), "level=DEBUG")
	require.Contains(t, logs.String(), "lock=slow")
}
