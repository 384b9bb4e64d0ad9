package rlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A call that gives up (its WaitAtMost runs out, or its ctx ends) has left
// the queue when it returns, as etcd's Mutex deletes its key before Lock
// returns: a release right after it cannot grant the lock to the call
// that gave up, and a retry right after it does not find the lock held by
// its own abandoned waiter. Before, the leave ran in the background after
// the call returned, and the queue still held the waiter.
func TestAGivenUpCallHasLeftTheQueueWhenItReturns(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	c, other := newClient(t, srv), newClient(t, srv)
	for round := range 20 {
		held, err := other.Lock(ctx, "giveup")
		require.NoError(t, err)
		if round%2 == 0 {
			_, err = c.TryLock(ctx, "giveup", WaitAtMost(20*time.Millisecond))
		} else {
			cancelled, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
			_, err = c.Lock(cancelled, "giveup")
			cancel()
		}
		require.ErrorIs(t, err, ErrNotObtained)
		require.Zero(t, rdb.LLen(ctx, lockKey("giveup")+":queue").Val(), "round %d: still queued", round)
		require.NoError(t, held.Unlock(ctx))
		l, err := c.TryLock(ctx, "giveup")
		require.NoError(t, err, "round %d: the lock is free", round)
		require.NoError(t, l.Unlock(ctx))
	}
}
