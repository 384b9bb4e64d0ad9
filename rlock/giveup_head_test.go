package rlock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A queue head that gives up lets in the waiters behind it that fit now:
// its leave runs the grant a release runs. Every client has the default
// 30 s lease, so a waiter's own look comes 10 s (a third of it) after it
// queued; fast (3 s) is far below that, so a waiter admitted within it
// was admitted by the leave, and far above the few milliseconds the leave
// takes, with room for the load of a shared test machine.
func TestQueueHeadThatGivesUpAdmitsTheWaitersBehindIt(t *testing.T) {
	ctx, srv := serve(t)
	t.Run("rw", func(t *testing.T) {
		holder, writer, reader := newClient(t, srv), newClient(t, srv), newClient(t, srv)
		r, err := holder.RWLock("head").RLock(ctx)
		require.NoError(t, err)
		gaveUp := make(chan error, 1)
		go func() {
			_, err := writer.RWLock("head").TryLock(ctx, WaitAtMost(300*time.Millisecond))
			gaveUp <- err
		}()
		waitForRWQueued(t, srv, "head", 1)
		read := rlockInBackground(ctx, reader.RWLock("head"), false)
		waitForRWQueued(t, srv, "head", 2)
		require.ErrorIs(t, within(t, gaveUp, "the write did not give up"), ErrNotObtained)

		got := receiveBy(t, read, time.Now().Add(fast))
		require.NoError(t, got.lock.Unlock(ctx))
		require.NoError(t, r.Unlock(ctx))
	})
	t.Run("semaphore", func(t *testing.T) {
		holder, big, small := newClient(t, srv), newClient(t, srv), newClient(t, srv)
		p, err := holder.Semaphore("head", 4).Acquire(ctx, 3)
		require.NoError(t, err)
		gaveUp := make(chan error, 1)
		go func() {
			_, err := big.Semaphore("head", 4).TryAcquire(ctx, 2, WaitAtMost(300*time.Millisecond))
			gaveUp <- err
		}()
		waitForSemQueued(t, srv, "head", 1)
		one := acquireInBackground(ctx, small.Semaphore("head", 4), 1)
		waitForSemQueued(t, srv, "head", 2)
		require.ErrorIs(t, within(t, gaveUp, "the big ask did not give up"), ErrNotObtained)

		require.NoError(t, receivePermit(t, one).Release(ctx))
		require.NoError(t, p.Release(ctx))
	})
}
