package rlock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/reentrant/redistest"
)

// A Sentinel deployment through redis.NewFailoverClient: Lock, Unlock, a
// wait ended by a grant over pub/sub, and a failover mid-hold.
//
// The failover is made deterministic: the lock's keys have reached the
// replica (WAIT) before it is promoted, so the new master has the hold with
// its lease and token, the holder's renewals go on there, and it keeps the
// lock. (A failover that loses the last writes would lose the lock instead;
// the holder's Context would then end with ErrLockLost, and fencing tokens,
// drawn from the server clock, would still rise.)
func TestSentinel(t *testing.T) {
	ctx := testCtx(t)
	s := redistest.StartSentinel(t)
	const lease = 5 * time.Second // longer than the switch-over takes
	holder, err := New(s.FailoverClient(), WithWatchdogLease(lease))
	require.NoError(t, err)
	t.Cleanup(func() { _ = holder.Close() })
	waiter, err := New(s.FailoverClient())
	require.NoError(t, err)
	t.Cleanup(func() { _ = waiter.Close() })

	l, err := holder.Lock(ctx, "sentinel")
	require.NoError(t, err)
	got := lockInBackground(ctx, waiter, "sentinel")
	require.Eventually(t, func() bool { return s.Master.Admin().LLen(ctx, lockKey("sentinel")+":queue").Val() == 1 },
		5*time.Second, 2*time.Millisecond, "the waiter queues through the failover client")
	require.NoError(t, l.Unlock(ctx))
	w := receive(t, got)
	require.Greater(t, w.Token(), l.Token())
	require.NoError(t, w.Unlock(ctx))

	held, err := holder.Lock(ctx, "held-across")
	require.NoError(t, err)
	require.EqualValues(t, 1, s.Master.Admin().Wait(ctx, 1, time.Second).Val(), "the hold reached the replica")
	s.Failover()
	time.Sleep(lease / 2) // renewals on the new master
	require.NoError(t, held.Context().Err(), "the holder lost the lock in a failover that kept it")
	st, err := s.Master.Admin().HGetAll(ctx, lockKey("held-across")).Result()
	require.NoError(t, err)
	require.Equal(t, map[string]string{held.Owner(): "1"}, st, "the new master has the hold")
	_, err = waiter.TryLock(ctx, "held-across")
	require.ErrorIs(t, err, ErrNotObtained, "the new master excludes")
	require.NoError(t, held.Unlock(ctx))

	after, err := waiter.Lock(ctx, "held-across")
	require.NoError(t, err)
	require.Greater(t, after.Token(), held.Token(), "tokens rise across the failover")
	require.NoError(t, after.Unlock(ctx))
	counterRun(t, ctx, s.Master.Admin(), []*Client{holder, waiter}, "after-failover", 4, 200)
}
