package rlock

import (
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// Redis keeps a key through the millisecond in which it expires, and PTTL
// reads 0 there. A waiter whose retry lands in that millisecond must take 0
// for "expiring now" and retry promptly, not for "no expiry", which waits a
// second. miniredis's clock only moves when told, so the key can sit in its
// last millisecond for as long as the test likes.
func TestWaiterRetriesPromptlyWhenPTTLReadsZero(t *testing.T) {
	ctx := testCtx(t)
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	holder, err := New(rdb)
	require.NoError(t, err)
	t.Cleanup(func() { _ = holder.Close() })
	waiter, err := New(rdb)
	require.NoError(t, err)
	t.Cleanup(func() { _ = waiter.Close() })

	_, err = holder.Lock(ctx, "z", WithLease(MinLease))
	require.NoError(t, err)
	mr.FastForward(MinLease - 500*time.Microsecond) // PTTL reads 0; the key stays
	require.Zero(t, rdb.PTTL(ctx, lockKey("z")).Val())
	type result struct {
		l   *Lock
		err error
		at  time.Time
	}
	got := make(chan result, 1)
	go func() {
		l, err := waiter.Lock(ctx, "z")
		got <- result{l, err, time.Now()}
	}()
	time.Sleep(100 * time.Millisecond) // the waiter has seen PTTL 0 and waits
	mr.FastForward(time.Millisecond)
	expired := time.Now()
	select {
	case r := <-got:
		require.NoError(t, r.err)
		require.Less(t, r.at.Sub(expired), 300*time.Millisecond, "the waiter took PTTL 0 for no expiry")
		require.NoError(t, r.l.Unlock(ctx))
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter never acquired")
	}
}
