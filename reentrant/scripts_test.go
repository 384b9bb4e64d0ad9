package reentrant

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

const testLease = 10 * time.Second

func setup(t *testing.T, name string) (context.Context, *redis.Client, Keys) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	rdb := redistest.Start(t).Client()
	l, err := Namespace{}.Keys(name)
	require.NoError(t, err)
	return ctx, rdb, l
}

// currentToken reads the fencing counter, which is the token of the hold
// that holds l.
func currentToken(t *testing.T, rdb *redis.Client, l Keys) uint64 {
	t.Helper()
	n, err := rdb.Get(context.Background(), l.Fence).Uint64()
	if err != nil && err != redis.Nil {
		t.Fatal(err)
	}
	return n
}

// publishes counts the PUBLISH commands the server ran, scripts included.
func publishes(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	st, err := redistest.ReadCommandStats(context.Background(), rdb)
	require.NoError(t, err)
	return st["publish"]
}

// subscribed subscribes to the grant channel of client "c-<id>" and
// returns the subscription and a waiter on it.
func subscribed(t *testing.T, rdb *redis.Client, l Keys, id string) (*redis.PubSub, Waiter) {
	t.Helper()
	w := Waiter{ID: id, Channel: l.GrantChannel("c-" + id)}
	sub := rdb.Subscribe(context.Background(), w.Channel)
	t.Cleanup(func() { _ = sub.Close() })
	_, err := sub.Receive(context.Background())
	require.NoError(t, err)
	return sub, w
}

func receiveGrant(t *testing.T, sub *redis.PubSub) Grant {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	msg, err := sub.ReceiveMessage(ctx)
	require.NoError(t, err)
	g, err := ParseGrant(msg.Payload)
	require.NoError(t, err)
	return g
}

func TestAcquireReenterRelease(t *testing.T) {
	ctx, rdb, l := setup(t, "orders")

	r, err := l.Acquire(ctx, rdb, "A", "r1", testLease, 0, Waiter{})
	require.NoError(t, err)
	require.True(t, r.Acquired)
	require.EqualValues(t, 1, r.HoldCount)
	first := r.Token

	r, err = l.Acquire(ctx, rdb, "A", "r2", testLease, 0, Waiter{})
	require.NoError(t, err)
	require.Equal(t, AcquireResult{Acquired: true, HoldCount: 2, Token: first}, r, "re-entry keeps the token")

	other, err := l.Acquire(ctx, rdb, "B", "r3", testLease, 0, Waiter{})
	require.NoError(t, err)
	require.False(t, other.Acquired)
	require.InDelta(t, testLease, other.HolderTTL, float64(time.Second), "B gets the holder's PTTL")

	st, err := l.Inspect(ctx, rdb)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"A": 2}, st.Holders)
	require.Equal(t, first, st.LastToken)

	rel, err := l.Release(ctx, rdb, "B", currentToken(t, rdb, l), "r4")
	require.NoError(t, err)
	require.Equal(t, NotHeld, rel.Status, "a non-owner cannot release")

	rel, err = l.Release(ctx, rdb, "A", currentToken(t, rdb, l), "r5")
	require.NoError(t, err)
	require.Equal(t, ReleaseResult{Status: StillHeld, Remaining: 1}, rel)

	before := publishes(t, rdb)
	rel, err = l.Release(ctx, rdb, "A", currentToken(t, rdb, l), "r6")
	require.NoError(t, err)
	require.Equal(t, Released, rel.Status)
	require.Zero(t, rdb.Exists(ctx, l.Hash).Val())
	require.Equal(t, before, publishes(t, rdb), "no PUBLISH when nobody waits")

	r, err = l.Acquire(ctx, rdb, "B", "r7", testLease, 0, Waiter{})
	require.NoError(t, err)
	require.True(t, r.Acquired)
	require.Greater(t, r.Token, first, "a new holder gets a higher token")
}

// go-redis resends a command after a timeout, so one logical request can run
// twice; the second run must replay, not count again.
func TestRequestIDReplays(t *testing.T) {
	ctx, rdb, l := setup(t, "replay")

	var first uint64
	for i := 0; i < 2; i++ {
		r, err := l.Acquire(ctx, rdb, "A", "same", testLease, 0, Waiter{})
		require.NoError(t, err)
		if i == 0 {
			first = r.Token
		}
		require.Equal(t, AcquireResult{Acquired: true, HoldCount: 1, Token: first, Reported: i > 0}, r, "run %d", i)
	}
	st, err := l.Inspect(ctx, rdb)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"A": 1}, st.Holders, "hold count still 1")

	_, err = l.Acquire(ctx, rdb, "A", "second", testLease, 0, Waiter{})
	require.NoError(t, err)
	for i := 0; i < 2; i++ {
		rel, err := l.Release(ctx, rdb, "A", currentToken(t, rdb, l), "rel")
		require.NoError(t, err)
		require.Equal(t, ReleaseResult{Status: StillHeld, Remaining: 1}, rel, "run %d", i)
	}
	st, err = l.Inspect(ctx, rdb)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"A": 1}, st.Holders, "one release counted once")

	// A remembered acquire is not replayed once the owner has lost the lock.
	_, err = l.ForceRelease(ctx, rdb)
	require.NoError(t, err)
	r, err := l.Acquire(ctx, rdb, "A", "same", testLease, 0, Waiter{})
	require.NoError(t, err)
	require.True(t, r.Acquired)
	require.EqualValues(t, 1, r.HoldCount)
	require.Greater(t, r.Token, first, "fresh acquisition, fresh token")
}

// A token tells one owner's holds apart: a release, renewal or re-entry
// meant for a hold that has ended changes nothing in the owner's next hold.
func TestStaleTokenChangesNothing(t *testing.T) {
	ctx, rdb, l := setup(t, "stale")
	r, err := l.Acquire(ctx, rdb, "A", "r1", testLease, 0, Waiter{})
	require.NoError(t, err)
	old := r.Token
	_, err = l.ForceRelease(ctx, rdb)
	require.NoError(t, err)
	r, err = l.Acquire(ctx, rdb, "A", "r2", testLease, 0, Waiter{})
	require.NoError(t, err)
	require.Greater(t, r.Token, old)

	rel, err := l.Release(ctx, rdb, "A", old, "r3")
	require.NoError(t, err)
	require.Equal(t, NotHeld, rel.Status)
	ok, err := l.Renew(ctx, rdb, "A", old, testLease)
	require.NoError(t, err)
	require.False(t, ok)
	again, err := l.Acquire(ctx, rdb, "A", "r4", testLease, old, Waiter{})
	require.NoError(t, err)
	require.Equal(t, AcquireResult{HoldGone: true}, again)
	st, err := l.Inspect(ctx, rdb)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"A": 1}, st.Holders, "the new hold is untouched")

	again, err = l.Acquire(ctx, rdb, "A", "r5", testLease, r.Token, Waiter{})
	require.NoError(t, err)
	require.Equal(t, AcquireResult{Acquired: true, HoldCount: 2, Token: r.Token}, again)
	_, err = l.ForceRelease(ctx, rdb)
	require.NoError(t, err)
	again, err = l.Acquire(ctx, rdb, "A", "r6", testLease, r.Token, Waiter{})
	require.NoError(t, err)
	require.True(t, again.HoldGone, "a re-entry never takes a free lock")
	require.Zero(t, rdb.Exists(ctx, l.Hash).Val())
}

// Neither a partial release nor a renewal shortens the lease: a nested hold
// with a longer lease keeps what it was promised (issue 9, failure 1).
func TestPartialReleaseAndRenewalKeepTheLongestLease(t *testing.T) {
	ctx, rdb, l := setup(t, "keep")
	r, err := l.Acquire(ctx, rdb, "A", "outer", 500*time.Millisecond, 0, Waiter{})
	require.NoError(t, err)
	_, err = l.Acquire(ctx, rdb, "A", "inner", testLease, r.Token, Waiter{})
	require.NoError(t, err)
	ok, err := l.Renew(ctx, rdb, "A", r.Token, 500*time.Millisecond)
	require.NoError(t, err)
	require.True(t, ok)
	require.Greater(t, rdb.PTTL(ctx, l.Hash).Val(), testLease/2, "renewal kept the longer lease")
	rel, err := l.Release(ctx, rdb, "A", r.Token, "leave-outer")
	require.NoError(t, err)
	require.Equal(t, StillHeld, rel.Status)
	require.Greater(t, rdb.PTTL(ctx, l.Hash).Val(), testLease/2, "partial release kept the lease")
}

// A fractional-millisecond lease goes to Redis rounded up, never down, so
// Redis never expires the lock before the caller's lease ends.
func TestFractionalLeaseRoundsUp(t *testing.T) {
	ctx, rdb, l := setup(t, "fraction")
	for lease, ms := range map[time.Duration]int64{
		time.Nanosecond: 1, time.Millisecond: 1, 40 * time.Millisecond: 40,
		40*time.Millisecond + 950*time.Microsecond: 41, 40*time.Millisecond + time.Nanosecond: 41,
	} {
		got, err := leaseMillis(lease)
		require.NoError(t, err)
		require.Equal(t, ms, got, "%v", lease)
	}
	_, err := l.AcquireNew(ctx, rdb, "A", 40*time.Millisecond+950*time.Microsecond, Waiter{})
	require.NoError(t, err)
	require.GreaterOrEqual(t, rdb.PTTL(ctx, l.Hash).Val().Milliseconds(), int64(40))
}

func TestReentryNeverShortensLease(t *testing.T) {
	ctx, rdb, l := setup(t, "lease")
	_, err := l.Acquire(ctx, rdb, "A", "r1", testLease, 0, Waiter{})
	require.NoError(t, err)
	_, err = l.Acquire(ctx, rdb, "A", "r2", 50*time.Millisecond, 0, Waiter{})
	require.NoError(t, err)
	require.Greater(t, rdb.PTTL(ctx, l.Hash).Val(), testLease/2)
}

func TestRenew(t *testing.T) {
	ctx, rdb, l := setup(t, "renew")
	ok, err := l.Renew(ctx, rdb, "A", currentToken(t, rdb, l), testLease)
	require.NoError(t, err)
	require.False(t, ok)
	require.Zero(t, rdb.Exists(ctx, l.Hash).Val(), "renew never creates a lock")

	_, err = l.Acquire(ctx, rdb, "A", "r1", time.Second, 0, Waiter{})
	require.NoError(t, err)
	ok, err = l.Renew(ctx, rdb, "A", currentToken(t, rdb, l), testLease)
	require.NoError(t, err)
	require.True(t, ok)
	require.Greater(t, rdb.PTTL(ctx, l.Hash).Val(), 5*time.Second)

	ok, err = l.Renew(ctx, rdb, "B", currentToken(t, rdb, l), testLease)
	require.NoError(t, err)
	require.False(t, ok, "only the holder renews")
}

func TestRenewAllBatchesAndSurvivesScriptFlush(t *testing.T) {
	ctx, rdb, _ := setup(t, "unused")
	ns := Namespace{}
	var holds []Hold
	for i, name := range []string{"a", "b", "c"} {
		l, err := ns.Keys(name)
		require.NoError(t, err)
		hold := Hold{Keys: l, Owner: "A", Token: 1}
		if i < 2 {
			r, err := l.Acquire(ctx, rdb, "A", "r", time.Second, 0, Waiter{})
			require.NoError(t, err)
			hold.Token = r.Token
		}
		holds = append(holds, hold)
	}
	require.NoError(t, rdb.ScriptFlush(ctx).Err())
	errs := RenewAll(ctx, rdb, holds, testLease)
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.ErrorIs(t, errs[2], ErrNotHeld)
	require.Greater(t, rdb.PTTL(ctx, holds[0].Keys.Hash).Val(), 5*time.Second)
}

func TestForceRelease(t *testing.T) {
	ctx, rdb, l := setup(t, "force")
	deleted, err := l.ForceRelease(ctx, rdb)
	require.NoError(t, err)
	require.Zero(t, deleted)

	r, err := l.Acquire(ctx, rdb, "A", "r1", testLease, 0, Waiter{})
	require.NoError(t, err)
	_, err = l.Acquire(ctx, rdb, "A", "r2", testLease, 0, Waiter{})
	require.NoError(t, err)
	sub, w := subscribed(t, rdb, l, "B-waiter")
	got, err := l.AcquireNew(ctx, rdb, "B", testLease, w)
	require.NoError(t, err)
	require.False(t, got.Acquired)
	deleted, err = l.ForceRelease(ctx, rdb)
	require.NoError(t, err)
	require.Equal(t, r.Token, deleted, "it names the hold it deleted")
	g := receiveGrant(t, sub)
	require.Equal(t, "B-waiter", g.Waiter, "and hands the lock on")
	require.Greater(t, g.Token, deleted)
	st, err := l.Inspect(ctx, rdb)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"B": 1}, st.Holders)
}

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

func TestInvalidLease(t *testing.T) {
	_, rdb, l := setup(t, "bad")
	_, err := l.Acquire(context.Background(), rdb, "A", "r", 0, 0, Waiter{})
	require.ErrorIs(t, err, ErrInvalidLease)
	_, err = l.Renew(context.Background(), rdb, "A", 1, -time.Microsecond)
	require.ErrorIs(t, err, ErrInvalidLease)
}

func TestShardedGrant(t *testing.T) {
	ctx, rdb, _ := setup(t, "unused")
	l, err := Namespace{Sharded: true}.Keys("sharded")
	require.NoError(t, err)
	w := Waiter{ID: "w1", Channel: l.GrantChannel("c1")}
	sub := rdb.SSubscribe(ctx, w.Channel)
	defer sub.Close()
	_, err = sub.Receive(ctx)
	require.NoError(t, err)
	a, err := l.AcquireNew(ctx, rdb, "A", testLease, Waiter{})
	require.NoError(t, err)
	_, err = l.AcquireNew(ctx, rdb, "B", testLease, w)
	require.NoError(t, err)
	rel, err := l.Release(ctx, rdb, "A", a.Token, "r2")
	require.NoError(t, err)
	require.Equal(t, Released, rel.Status)
	msg, err := sub.ReceiveMessage(ctx)
	require.NoError(t, err)
	g, err := ParseGrant(msg.Payload)
	require.NoError(t, err)
	require.Equal(t, "w1", g.Waiter)
}

// An owner made for one call needs no request key: a resent acquire finds
// the owner already holding and reports that hold without counting it.
func TestAcquireNewIsIdempotentWithoutRequestKey(t *testing.T) {
	ctx, rdb, l := setup(t, "new-owner")
	var first uint64
	for i := 0; i < 2; i++ {
		r, err := l.AcquireNew(ctx, rdb, "fresh", testLease, Waiter{})
		require.NoError(t, err)
		if i == 0 {
			first = r.Token
		}
		require.Equal(t, AcquireResult{Acquired: true, HoldCount: 1, Token: first, Reported: i > 0}, r, "run %d", i)
	}
	keys, err := rdb.Keys(ctx, "baton:{new-owner}:req:*").Result()
	require.NoError(t, err)
	require.Empty(t, keys, "no request key on the new-owner path")

	r, err := l.AcquireNew(ctx, rdb, "other", testLease, Waiter{})
	require.NoError(t, err)
	require.False(t, r.Acquired)
	require.Positive(t, r.HolderTTL)

	r, err = l.Acquire(ctx, rdb, "fresh", "nested", testLease, 0, Waiter{}) // re-entry through the handle's owner
	require.NoError(t, err)
	require.Equal(t, AcquireResult{Acquired: true, HoldCount: 2, Token: first}, r)
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
