package reentrant

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

func TestFencingTokensIncrease(t *testing.T) {
	ctx, rdb, l := setup(t, "fence")
	var last uint64
	for i := 0; i < 100; i++ {
		owner := fmt.Sprint("owner-", i%7)
		r, err := l.Acquire(ctx, rdb, owner, fmt.Sprint("acq-", i), testLease, 0, Waiter{})
		require.NoError(t, err)
		require.True(t, r.Acquired)
		require.Greater(t, r.Token, last)
		last = r.Token
		_, err = l.Release(ctx, rdb, owner, currentToken(t, rdb, l), fmt.Sprint("rel-", i))
		require.NoError(t, err)
	}
}

// A Redis that restarts without its data loses the fencing counter with the
// locks. Tokens follow the server clock, so a holder from before the restart
// never has a token at or above one handed out after it.
func TestTokensKeepRisingAcrossRestartWithoutPersistence(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	l, err := Namespace{}.Keys("restart")
	require.NoError(t, err)
	var before uint64
	for i := 0; i < 5; i++ {
		r, err := l.Acquire(ctx, rdb, "A", fmt.Sprint("a", i), testLease, 0, Waiter{})
		require.NoError(t, err)
		before = r.Token
		_, err = l.Release(ctx, rdb, "A", currentToken(t, rdb, l), fmt.Sprint("r", i))
		require.NoError(t, err)
	}
	now := uint64(time.Now().UnixMicro())
	require.InDelta(t, now, before, float64(time.Minute.Microseconds()), "tokens follow the server clock in µs")

	srv.Restart()
	require.Eventually(t, func() bool { return rdb.Ping(ctx).Err() == nil }, 5*time.Second, 10*time.Millisecond)
	r, err := l.Acquire(ctx, rdb, "B", "after", testLease, 0, Waiter{})
	require.NoError(t, err)
	require.True(t, r.Acquired)
	require.Greater(t, r.Token, before, "a token after the restart beats every token before it")
}

// Tokens rise by at least one per hold even when the counter is ahead of
// the clock, as after a clock step backwards.
func TestTokensRiseWhenCounterIsAheadOfClock(t *testing.T) {
	ctx, rdb, l := setup(t, "ahead")
	ahead := uint64(time.Now().Add(time.Hour).UnixMicro())
	require.NoError(t, rdb.Set(ctx, l.Fence, ahead, 0).Err())
	r, err := l.AcquireNew(ctx, rdb, "A", testLease, Waiter{})
	require.NoError(t, err)
	require.Equal(t, ahead+1, r.Token)
}
