package rlock

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// With one node of 3 down, from before the clients start or from the
// middle of their work, locks are taken, waited for, renewed and
// released, and tokens go on rising.
func TestQuorumOneNodeDown(t *testing.T) {
	ctx := testCtx(t)
	srvs := startNodes(t, 3)
	srvs[2].Stop()
	a := newQuorumClient(t, srvs, WithWatchdogLease(steadyLease))
	b := newQuorumClient(t, srvs, WithWatchdogLease(steadyLease))
	l, err := a.Lock(ctx, "down")
	require.NoError(t, err)
	got := lockInBackground(ctx, b, "down")
	time.Sleep(2 * steadyLease) // renewed by the two nodes up
	require.NoError(t, l.Context().Err())
	require.NoError(t, l.Unlock(ctx))
	next := receive(t, got)
	require.Greater(t, next.Token(), l.Token())
	require.NoError(t, next.Unlock(ctx))

	srvs[2].Restart()
	srvs[0].Stop()
	for range 3 {
		l2, err := a.Lock(ctx, "down")
		require.NoError(t, err)
		require.Greater(t, l2.Token(), next.Token())
		next = l2
		require.NoError(t, l2.Unlock(ctx))
	}
}

// With a majority down (2 of 3, 3 of 5), Lock and TryLock fail with
// ErrNoQuorum naming the nodes they could not reach, and leave nothing on
// the nodes up.
func TestQuorumMajorityDown(t *testing.T) {
	for _, n := range []int{3, 5} {
		t.Run(fmt.Sprint(n, " nodes"), func(t *testing.T) {
			ctx := testCtx(t)
			srvs := startNodes(t, n)
			c := newQuorumClient(t, srvs)
			l, err := c.Lock(ctx, "maj")
			require.NoError(t, err)
			require.NoError(t, l.Unlock(ctx))
			down, up := srvs[:n/2+1], srvs[n/2+1:]
			for _, s := range down {
				s.Stop()
			}
			for _, lock := range []func(context.Context, string, ...LockOption) (*Lock, error){c.Lock, c.TryLock} {
				_, err := lock(ctx, "maj")
				require.ErrorIs(t, err, ErrNoQuorum)
				for _, s := range down {
					require.ErrorContains(t, err, s.Addr)
				}
				for _, s := range up {
					require.NotContains(t, err.Error(), s.Addr)
				}
			}
			requireNothingLeftOnNodes(t, ctx, up, "maj")
		})
	}
}

// A paused node (SIGSTOP: connections open, nothing answered) delays no
// acquire, renewal or release a majority answers; a hold that needs it
// for its majority ends by its validity, with ErrLockLost.
func TestQuorumPausedNode(t *testing.T) {
	ctx := testCtx(t)
	srvs := startNodes(t, 3)
	c := newQuorumClient(t, srvs, WithWatchdogLease(steadyLease))
	l, err := c.Lock(ctx, "paused")
	require.NoError(t, err)
	require.NoError(t, l.Unlock(ctx))
	// The third node's grant may come after the hold was made and
	// released: it is given back in the background. Until it is, that
	// node refuses, and the next look's majority needs the paused node,
	// whose answer it may wait for (see "Quorum mode" in the README).
	requireNothingLeftOnNodes(t, ctx, srvs, "paused")

	srvs[2].Pause()
	t.Cleanup(srvs[2].Resume)
	start := time.Now()
	l, err = c.Lock(ctx, "paused")
	require.NoError(t, err)
	time.Sleep(2 * steadyLease)
	require.NoError(t, l.Context().Err(), "renewed by the majority up")
	require.NoError(t, l.Unlock(ctx))
	// A call that waited for the paused node would wait for its reply
	// until fanOut's bound on each node's call (the lease, 1 s) or
	// go-redis's ReadTimeout (3 s by default) ended it: at least 1 s on
	// top of the sleep. Lock and Unlock on the two nodes up take a few ms.
	waited := min(steadyLease, readTimeout(srvs[2].Client()))
	require.Less(t, time.Since(start), 2*steadyLease+waited, "no call waited for the paused node")

	l, err = c.Lock(ctx, "paused")
	require.NoError(t, err)
	srvs[1].Pause()
	t.Cleanup(srvs[1].Resume)
	select {
	case <-l.Context().Done():
	case <-time.After(2 * steadyLease):
		t.Fatal("the hold outlived its validity without a majority")
	}
	require.ErrorIs(t, context.Cause(l.Context()), ErrLockLost)
	srvs[1].Resume()
	srvs[2].Resume()
	err = l.Unlock(ctx)
	require.True(t, err == nil || errors.Is(err, ErrLockLost), "%v", err)
}

// ForceUnlock in quorum mode deletes the lock on a majority at least: the
// holder's Context ends with ErrLockLost, another client takes the lock
// at once with a higher token, which Inspect reports, and a ForceUnlock of
// the free lock ends nothing.
func TestQuorumForceUnlock(t *testing.T) {
	ctx := testCtx(t)
	srvs := startNodes(t, 3)
	a := newQuorumClient(t, srvs)
	b := newQuorumClient(t, srvs)
	la, err := a.Lock(ctx, "force")
	require.NoError(t, err)
	n, err := a.ForceUnlock(ctx, "force")
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	require.ErrorIs(t, context.Cause(la.Context()), ErrLockLost)
	lb, err := b.TryLock(ctx, "force")
	require.NoError(t, err, "free on every node")
	require.Greater(t, lb.Token(), la.Token())
	st, err := a.Inspect(ctx, "force")
	require.NoError(t, err)
	require.Equal(t, map[string]int64{lb.Owner(): 1}, st.Holders)
	// A node that answered after B's majority may have read a token of
	// its own above B's (see State.LastToken).
	require.GreaterOrEqual(t, st.LastToken, lb.Token())
	require.NoError(t, lb.Unlock(ctx))
	// Free on every node: Unlock returned once a majority released, and
	// a third node's release (B's hold is on every node that granted it
	// in time) may still be on its way.
	requireNothingLeftOnNodes(t, ctx, srvs, "force")
	n, err = a.ForceUnlock(ctx, "force")
	require.NoError(t, err)
	require.Zero(t, n, "nothing held")
}
