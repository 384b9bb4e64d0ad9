package rlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// noWriterWhile fails the test if writer, a background write of an RW lock,
// is granted within d while the read r it must wait for is alive.
func noWriterWhile(t *testing.T, writer <-chan acquired, r *Lock, d time.Duration) {
	t.Helper()
	select {
	case w := <-writer:
		require.Error(t, r.Context().Err(), "a writer got in beside a live read (err %v)", w.err)
	case <-time.After(d):
	}
	require.NoError(t, r.Context().Err())
}

// writerAfter unlocks read r, after which writer, a background write that
// waited for it, gets in; it unlocks the write.
func writerAfter(ctx context.Context, t *testing.T, r *Lock, writer <-chan acquired) {
	t.Helper()
	require.NoError(t, r.Unlock(ctx))
	w := receive(t, writer)
	require.NoError(t, w.Unlock(ctx))
}

// writeInBackground calls rw.Lock on another goroutine.
func writeInBackground(ctx context.Context, rw *RWLock) <-chan acquired {
	got := make(chan acquired, 1)
	go func() {
		l, err := rw.Lock(ctx)
		got <- acquired{lock: l, at: time.Now(), err: err}
	}()
	return got
}

// A read's token is the last write's, so one owner's reads in a row carry
// the same token: a stale read's Unlock, after its lease ran out, must not
// end the same owner's next read, on the same client or another, nor let a
// queued writer in beside it. Holds are told apart by hold ID.
func TestRWStaleReadUnlockSparesTheOwnersNextRead(t *testing.T) {
	for _, across := range []bool{false, true} {
		name := map[bool]string{false: "same client", true: "across clients"}[across]
		t.Run(name, func(t *testing.T) {
			ctx, srv := serve(t)
			a := newClient(t, srv)
			b := a
			if across {
				b = newClient(t, srv)
			}
			octx := WithOwner(ctx, "job-17")
			old, err := a.RWLock("stale").RLock(octx, WithLease(200*time.Millisecond))
			require.NoError(t, err)
			<-old.Context().Done()
			require.Eventually(t, func() bool {
				st, err := a.RWLock("stale").Inspect(ctx)
				return err == nil && len(st.Readers) == 0
			}, fast, 5*time.Millisecond, "the read's lease did not run out in Redis")

			next, err := b.RWLock("stale").RLock(octx, WithLease(longLease))
			require.NoError(t, err)
			require.Equal(t, old.Token(), next.Token(), "the reads share the last write's token")
			writer := writeInBackground(ctx, newClient(t, srv).RWLock("stale"))
			waitForRWQueued(t, srv, "stale", 1)

			require.ErrorIs(t, old.Unlock(ctx), ErrLockLost)
			noWriterWhile(t, writer, next, 300*time.Millisecond)
			st, err := a.RWLock("stale").Inspect(ctx)
			require.NoError(t, err)
			require.Equal(t, map[string]int64{"job-17": 1}, st.Readers, "the next read was ended")
			writerAfter(ctx, t, next, writer)
		})
	}
}

// Two reads of one owner on two clients, granted in one batch: B's client
// hears of its grant 700 ms late, past its 300 ms lease, and gives it
// back. It gives back only its own count: A's read, alive, keeps a writer
// out.
func TestRWLateGrantToASharedOwnerGivesBackOnlyItsOwnCount(t *testing.T) {
	ctx, srv := serve(t)
	p := startProxy(t, srv.Addr)
	w := newClient(t, srv)
	ca := newClient(t, srv)
	cb := p.newClient(t)
	const name = "late"
	write, err := w.RWLock(name).Lock(ctx)
	require.NoError(t, err)
	octx := WithOwner(ctx, "given-reader")
	readA := make(chan acquired, 1)
	go func() {
		l, err := ca.RWLock(name).RLock(octx)
		readA <- acquired{lock: l, err: err}
	}()
	waitForRWQueued(t, srv, name, 1)
	bctx, stopB := context.WithCancel(octx)
	defer stopB()
	readB := make(chan acquired, 1)
	go func() {
		l, err := cb.RWLock(name).RLock(bctx, WithLease(300*time.Millisecond))
		readB <- acquired{lock: l, err: err}
	}()
	waitForRWQueued(t, srv, name, 2)

	p.HoldReplies()
	require.NoError(t, write.Unlock(ctx)) // grants A and B in one batch
	a := receive(t, readA)
	time.Sleep(700 * time.Millisecond)
	p.ReleaseReplies()

	// B gives its grant back, and may then take a read of its own as the
	// given owner; either way A's count stays.
	time.Sleep(300 * time.Millisecond)
	writer := writeInBackground(ctx, w.RWLock(name))
	noWriterWhile(t, writer, a, 500*time.Millisecond)
	stopB()
	if b := <-readB; b.err == nil {
		// Its 300 ms lease may have run out here; its count goes back
		// either way.
		if err := b.lock.Unlock(ctx); err != nil {
			require.ErrorIs(t, err, ErrLockLost)
		}
	}
	writerAfter(ctx, t, a, writer)
}

// ForceUnlock's reply is delayed while the same client reads again as the
// same owner: the new read, which the force-release did not end, keeps
// its Context and its hold.
func TestRWForceUnlockEndsOnlyTheHoldsItEnded(t *testing.T) {
	ctx, srv := serve(t)
	p := startProxy(t, srv.Addr)
	c := p.newClient(t)
	rw := c.RWLock("forced")
	octx := WithOwner(ctx, "O")
	old, err := rw.RLock(octx)
	require.NoError(t, err)

	check := newClient(t, srv).RWLock("forced")
	// The script is loaded first: the held reply is then the one of the
	// run that ended the holds, not a NOSCRIPT.
	_, err = c.RWLock("warm").ForceUnlock(ctx)
	require.NoError(t, err)
	release := p.HoldNextReply(isScript("rw-force-release"))
	forced := make(chan error, 1)
	go func() {
		_, err := rw.ForceUnlock(ctx)
		forced <- err
	}()
	require.Eventually(t, func() bool {
		st, err := check.Inspect(ctx)
		return err == nil && len(st.Readers) == 0
	}, fast, 5*time.Millisecond, "the force-release did not run")
	next, err := rw.RLock(octx)
	require.NoError(t, err)
	release()
	require.NoError(t, within(t, forced, "ForceUnlock did not return"))

	require.ErrorIs(t, context.Cause(old.Context()), ErrLockLost)
	require.NoError(t, next.Context().Err(), "the new read was cut off")
	require.NoError(t, next.Unlock(ctx))
	require.ErrorIs(t, old.Unlock(ctx), ErrLockLost)
}
