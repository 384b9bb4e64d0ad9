package notify

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// One message wakes one waiter; n messages wake n.
func TestMessageWakesExactlyOne(t *testing.T) {
	f := newFixture(t, Classic)
	const waiters = 20
	results := make(chan error, waiters)
	for range waiters {
		s := f.subscribe(t, "one")
		go func() { results <- s.Wait(testCtx(t), 10*time.Second) }()
	}
	awaitWaiters(t, f.hub, "one", waiters)

	woken := func(n int) {
		t.Helper()
		for range n {
			require.NoError(t, result(t, results))
		}
		requireBlocked(t, results)
	}
	f.publish(t, "one")
	woken(1)
	for range 5 {
		f.publish(t, "one")
	}
	woken(5)
	require.NoError(t, f.hub.Close())
	for range waiters - 6 {
		require.ErrorIs(t, result(t, results), ErrClosed)
	}
}

// A message that finds nobody waiting is kept for the next Wait, but no more
// permits are kept than there are references.
func TestMessageWithoutWaiterIsKept(t *testing.T) {
	forModes(t, func(t *testing.T, f *fixture) {
		s := f.subscribe(t, "kept")
		f.subscribe(t, "marker")
		for range 3 {
			f.publish(t, "kept")
		}
		// One connection delivers in order: once the marker is in, all are.
		f.publish(t, "marker")
		require.Eventually(t, func() bool {
			f.hub.mu.Lock()
			defer f.hub.mu.Unlock()
			return f.hub.entries["marker"].permits == 1
		}, settle, 5*time.Millisecond)

		start := time.Now()
		require.NoError(t, s.Wait(testCtx(t), 5*time.Second))
		require.Less(t, time.Since(start), grace)
		require.ErrorIs(t, s.Wait(testCtx(t), grace), ErrWaitTimeout)
	})
}

// A waiter picked by a message just as it gives up passes the wake-up on.
func TestAbandonedWakeUpPassesOn(t *testing.T) {
	f := newFixture(t, Classic)
	gaveUp, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once // only the first waiter is to give up: hold it there
	f.hub.onAbandon = func() { once.Do(func() { close(gaveUp); <-resume }) }

	first, second := f.subscribe(t, "pass"), f.subscribe(t, "pass")
	ctx, cancel := context.WithCancel(context.Background())
	firstRes := queuedWait(t, ctx, first, 1)
	secondRes := queuedWait(t, testCtx(t), second, 2)

	cancel()
	select {
	case <-gaveUp:
	case <-time.After(settle):
		t.Fatal("the first waiter did not give up")
	}
	// The first waiter is still at the head of the queue: the message picks it.
	f.publish(t, "pass")
	awaitWaiters(t, f.hub, "pass", 1)
	requireBlocked(t, secondRes)
	close(resume)

	require.ErrorIs(t, result(t, firstRes), context.Canceled)
	require.NoError(t, result(t, secondRes))
}
