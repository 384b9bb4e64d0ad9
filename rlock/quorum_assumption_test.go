package rlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// Issue 33, the assumption of quorum mode broken on purpose, with clocks
// in step (TestQuorumRestartWithoutDataBreaksTheAssumption breaks it with
// a token ahead of the clocks): A holds on exactly a majority, x and y (z
// was down while it locked, and comes back empty); then x loses A's hold
// and its counter in a restart without persistence. The nodes share this
// machine's clock.

// quorumAssumptionNodes are the nodes x, y, z and the holder A's lock,
// taken on x and y alone, for client a; b is another client.
func quorumAssumptionNodes(t *testing.T) (ctx context.Context, x, y, z *redistest.Server, a, b *Client, la *Lock) {
	ctx = testCtx(t)
	srvs := startNodes(t, 3)
	x, y, z = srvs[0], srvs[1], srvs[2]
	a = newQuorumClient(t, srvs, WithWatchdogLease(steadyLease))
	b = newQuorumClient(t, srvs, WithWatchdogLease(steadyLease))
	la = lockWithout(ctx, t, a, z, "assume")
	return ctx, x, y, z, a, b, la
}

// lockWithout takes name for c while node z is down, and relaunches z,
// empty, once the lock's validity has passed: until then c resends its
// acquire to z, and a late grant there would join the hold.
func lockWithout(ctx context.Context, t *testing.T, c *Client, z *redistest.Server, name string) *Lock {
	z.Kill()
	start := time.Now()
	l, err := c.Lock(ctx, name)
	require.NoError(t, err)
	time.Sleep(time.Until(start.Add(steadyLease)))
	z.Relaunch()
	return l
}

// Restarted empty at once, x grants the lock to B with z: a second holder
// while A's Context is live. A's next renewal is confirmed by y alone, so
// A's Context ends with ErrLockLost within a lease of B's grant; B's token
// is still above A's, since each node's token follows its clock (the
// nodes share one), so a fenced store refuses A's writes once B has
// written. Kept out for a lease instead, x comes back after A's hold has
// ended: B is granted with no overlap.
func TestQuorumEmptyRestartBreaksExclusionUnlessDelayed(t *testing.T) {
	t.Run("at-once", func(t *testing.T) {
		ctx, x, y, _, _, b, la := quorumAssumptionNodes(t)
		x.Restart()
		lb, err := b.TryLock(ctx, "assume")
		require.NoError(t, err, "a second holder: x and z are free")
		granted := time.Now()
		require.NoError(t, la.Context().Err(), "A's Context is live beside B's")
		require.Greater(t, lb.Token(), la.Token(), "tokens still rise: they follow the nodes' clock")

		store := admin(t, y)
		ok, err := fencedWrite(ctx, store, "assume-store", lb.Token(), "B")
		require.True(t, ok)
		require.NoError(t, err)
		ok, err = fencedWrite(ctx, store, "assume-store", la.Token(), "A")
		require.False(t, ok, "the store refuses A once B has written")
		require.NoError(t, err)

		select {
		case <-la.Context().Done():
			t.Logf("A and B both held for %v", time.Since(granted).Round(time.Millisecond))
		case <-time.After(steadyLease + time.Second):
			t.Fatal("A's hold outlived its validity without a majority")
		}
		require.ErrorIs(t, context.Cause(la.Context()), ErrLockLost)
		require.NoError(t, lb.Context().Err(), "B keeps its hold on x and z")
		require.ErrorIs(t, la.Unlock(ctx), ErrLockLost)
		require.NoError(t, lb.Unlock(ctx))
	})
	t.Run("kept-out-a-lease", func(t *testing.T) {
		ctx, x, _, _, _, b, la := quorumAssumptionNodes(t)
		x.Kill()
		down := time.Now()
		select {
		case <-la.Context().Done():
		case <-time.After(steadyLease + time.Second):
			t.Fatal("A's hold outlived its validity without a majority")
		}
		require.ErrorIs(t, context.Cause(la.Context()), ErrLockLost)
		time.Sleep(time.Until(down.Add(steadyLease)))
		x.Relaunch()
		lb, err := b.TryLock(ctx, "assume")
		require.NoError(t, err)
		require.Greater(t, lb.Token(), la.Token())
		require.NoError(t, lb.Unlock(ctx))
	})
}
