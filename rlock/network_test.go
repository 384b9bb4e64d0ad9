package rlock

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// The script runs and its reply is lost. Either go-redis resends the call
// (a read timeout, then a retry on a new connection) or the caller gets the
// error and acts on it. The request ID must turn every repeat into a replay:
// one acquire is one hold and one fencing token, one release is one PUBLISH.
func TestReplyLostAfterTheScriptRan(t *testing.T) {
	for _, tc := range []struct {
		name    string
		release bool // lose the release's reply rather than the acquire's
		retries int  // go-redis MaxRetries; -1: none, the caller sees the error
	}{
		{"acquire/go-redis resends", false, 2},
		{"acquire/caller gets the error", false, -1},
		{"release/go-redis resends", true, 2},
		{"release/caller retries", true, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			srv := redistest.Start(t)
			rdb := admin(t, srv)
			px := startProxy(t, srv.Addr)
			c, err := New(px.client(t, func(o *redis.Options) {
				o.ReadTimeout, o.MaxRetries = 300*time.Millisecond, tc.retries
			}))
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			other := newClient(t, srv)
			// Load the scripts, so the lost reply is a script's result and
			// not a NOSCRIPT.
			warm, err := c.Lock(ctx, "warm")
			require.NoError(t, err)
			require.NoError(t, warm.Unlock(ctx))
			// With retries, the lost reply stalls until the read times out;
			// without, the connection is hung up at once.
			hangUp := tc.retries < 0
			stats := func() redistest.CommandStats {
				s, err := redistest.ReadCommandStats(ctx, rdb)
				require.NoError(t, err)
				return s
			}

			if !tc.release {
				before := stats()
				px.DropNextReply(isScript("acquire"), hangUp)
				l, err := c.Lock(ctx, "lost")
				require.EqualValues(t, 1, px.Dropped())
				if tc.retries > 0 {
					require.NoError(t, err)
					require.EqualValues(t, 2, stats().Sub(before)["evalsha"], "the acquire ran twice on the server")
					holders, err := rdb.HGetAll(ctx, lockKey("lost")).Result()
					require.NoError(t, err)
					require.Equal(t, map[string]string{l.Owner(): "1"}, holders, "the repeat counted again")
					fence, err := rdb.Get(ctx, lockKey("lost")+":fence").Uint64()
					require.NoError(t, err)
					require.Equal(t, l.Token(), fence, "the repeat drew a second token")
					require.NoError(t, l.Unlock(ctx))
				} else {
					require.ErrorIs(t, err, io.EOF, "a transport error, not ErrNotObtained")
					require.Nil(t, l)
					// The failed Lock gives back what the lost acquire took.
					require.Eventually(t, func() bool {
						return rdb.Exists(ctx, lockKey("lost")).Val() == 0
					}, undoTimeout+fast, 5*time.Millisecond, "a failed Lock left the lock taken")
				}
				got, err := other.TryLock(ctx, "lost")
				require.NoError(t, err)
				require.NoError(t, got.Unlock(ctx))
				return
			}

			l, err := c.Lock(ctx, "lost")
			require.NoError(t, err)
			before := stats()
			px.DropNextReply(isScript("release"), hangUp)
			err = l.Unlock(ctx)
			require.EqualValues(t, 1, px.Dropped())
			if tc.retries < 0 {
				require.ErrorIs(t, err, io.EOF)
				require.NoError(t, l.Context().Err(), "an Unlock that failed in transit leaves the handle held")
				err = l.Unlock(ctx) // replays the release that ran
			}
			require.NoError(t, err)
			d := stats().Sub(before)
			require.EqualValues(t, 2, d["evalsha"], "the release ran twice on the server")
			require.EqualValues(t, 1, d["del"], "released exactly once")
			require.Zero(t, rdb.Exists(ctx, lockKey("lost")).Val())
			require.ErrorIs(t, l.Unlock(ctx), ErrNotHeld)
			got, err := other.TryLock(ctx, "lost")
			require.NoError(t, err)
			require.Greater(t, got.Token(), l.Token())
			require.NoError(t, got.Unlock(ctx))
		})
	}
}

// The network to Redis goes silent with sockets open: nothing errors, it
// just never answers. The holder must signal the loss by its local validity
// deadline, which is never later than Redis's own expiry of the lock, and
// waiters must return on their ctx.
func TestBlackholedConnection(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	px := startProxy(t, srv.Addr)
	const lease = 600 * time.Millisecond
	holder, err := New(px.client(t, ctxBound), WithWatchdogLease(lease))
	require.NoError(t, err)
	t.Cleanup(func() { _ = holder.Close() })
	waiter, err := New(px.client(t, ctxBound))
	require.NoError(t, err)
	t.Cleanup(func() { _ = waiter.Close() })

	l, err := holder.Lock(ctx, "bh")
	require.NoError(t, err)
	type result struct {
		err error
		at  time.Time
	}
	early := make(chan result, 1)
	earlyDeadline := time.Now().Add(lease + 500*time.Millisecond)
	go func() {
		wctx, cancel := context.WithDeadline(ctx, earlyDeadline)
		defer cancel()
		_, err := waiter.Lock(wctx, "bh")
		early <- result{err, time.Now()}
	}()
	waitForQueued(t, srv, "bh", 1)
	time.Sleep(lease / 3) // a renewal or two through the proxy

	cut := time.Now()
	px.Blackhole()
	// A renewal answered just before the cut may still be applied; after
	// this the deadline can only stay.
	time.Sleep(20 * time.Millisecond)
	deadline := clockBase.Add(time.Duration(l.hold.validity.until.Load()))
	require.False(t, deadline.After(cut.Add(lease)), "valid for more than a lease after the last contact")
	redisExpiry := expiryOf(t, rdb, lockKey("bh"))
	require.False(t, wallClock(deadline).After(redisExpiry),
		"the holder believes in the lock %v after Redis expires it", wallClock(deadline).Sub(redisExpiry))
	t.Logf("the holder's validity ends %v before Redis's expiry", redisExpiry.Sub(wallClock(deadline)))

	late := make(chan result, 1)
	lateDeadline := time.Now().Add(500 * time.Millisecond)
	go func() {
		wctx, cancel := context.WithDeadline(ctx, lateDeadline)
		defer cancel()
		_, err := waiter.Lock(wctx, "bh")
		late <- result{err, time.Now()}
	}()

	// The loss shows at the first look once the deadline has passed,
	// however late this goroutine runs: Err reads the validity itself.
	// Done follows by the validity timer, which TestHoldEndsAtItsValidity
	// times exactly; here, a wake-up that load can delay only has to come.
	time.Sleep(time.Until(deadline))
	require.Error(t, l.Context().Err(), "the deadline has passed")
	require.ErrorIs(t, context.Cause(l.Context()), ErrLockLost)
	select {
	case <-l.Context().Done():
	case <-time.After(2 * lease):
		t.Fatal("no loss signal")
	}
	// The release is still sent (Redis may hold the lock for the margin
	// yet); it cannot arrive, and the caller's ctx bounds it.
	uctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, l.Unlock(uctx), ErrLockLost)

	for _, w := range []struct {
		ch       chan result
		deadline time.Time
	}{{early, earlyDeadline}, {late, lateDeadline}} {
		r := <-w.ch
		require.ErrorIs(t, r.err, context.DeadlineExceeded)
		require.ErrorIs(t, r.err, ErrNotObtained)
		require.Less(t, r.at.Sub(w.deadline), 300*time.Millisecond, "waiter returned late")
	}
}

// expiryOf is the instant Redis expires key, on the wall clock: its
// PEXPIRETIME, which Redis keeps as an absolute instant, so that no delay
// of the reply moves it (PTTL is relative to an unknown instant between
// the send and the reply). Redis keeps the key through that millisecond.
func expiryOf(t *testing.T, rdb *redis.Client, key string) time.Time {
	t.Helper()
	at, err := rdb.PExpireTime(context.Background(), key).Result()
	require.NoError(t, err)
	require.Positive(t, at, "%s has no expiry", key)
	return time.UnixMilli(at.Milliseconds())
}

// wallClock is instant t, which may carry a monotonic reading, on the
// wall clock of now: the clock Redis on this machine reads.
func wallClock(t time.Time) time.Time {
	now := time.Now()
	return now.Round(0).Add(t.Sub(now))
}
