package reentrant

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// setKeys is the keys of n locks called prefix-0 … prefix-(n-1).
func setKeys(t *testing.T, prefix string, n int) []Keys {
	t.Helper()
	ks := make([]Keys, n)
	for i := range ks {
		k, err := Namespace{}.Keys(fmt.Sprintf("%s-%d", prefix, i))
		require.NoError(t, err)
		ks[i] = k
	}
	return ks
}

// TestAcquireSetStopsAtHeld: the set script takes the free members in
// order and stops at the first held one, taking nothing past it, even
// members that are free.
func TestAcquireSetStopsAtHeld(t *testing.T) {
	ctx, rdb, _ := setup(t, "x")
	ks := setKeys(t, "s", 4)
	held, err := ks[2].AcquireNew(ctx, rdb, "other", testLease, Waiter{})
	require.NoError(t, err)
	require.True(t, held.Acquired)

	tokens, err := AcquireSet(ctx, rdb, ks, "o", "", testLease, true)
	require.NoError(t, err)
	require.Len(t, tokens, 2)
	for i, tok := range tokens {
		require.Equal(t, tok, currentToken(t, rdb, ks[i]))
		require.Equal(t, "1", rdb.HGet(ctx, ks[i].Hash, "o").Val())
	}
	require.Zero(t, rdb.Exists(ctx, ks[3].Hash).Val(), "a member past the held one was taken")

	// A resend of the call counts the members it holds as taken.
	again, err := AcquireSet(ctx, rdb, ks, "o", "", testLease, true)
	require.NoError(t, err)
	require.Equal(t, tokens, again)
}

// TestAcquireSetReplay: with a given owner, a resent call replays the
// first one's reply, whatever changed since.
func TestAcquireSetReplay(t *testing.T) {
	ctx, rdb, _ := setup(t, "x")
	ks := setKeys(t, "r", 3)
	tokens, err := AcquireSet(ctx, rdb, ks, "given", "req-1", testLease, false)
	require.NoError(t, err)
	require.Len(t, tokens, 3)
	again, err := AcquireSet(ctx, rdb, ks, "given", "req-1", testLease, false)
	require.NoError(t, err)
	require.Equal(t, tokens, again)
	for _, k := range ks {
		require.Equal(t, "1", rdb.HGet(ctx, k.Hash, "given").Val(), "a replay counted a hold again")
	}
}

// TestReleaseSetHandsEachKeyOn: one release of a set hands each member to
// its own next waiter, one grant message each, and frees the others.
func TestReleaseSetHandsEachKeyOn(t *testing.T) {
	ctx, rdb, _ := setup(t, "x")
	ks := setKeys(t, "h", 3)
	tokens, err := AcquireSet(ctx, rdb, ks, "o", "", testLease, true)
	require.NoError(t, err)
	require.Len(t, tokens, 3)
	// A waiter each on members 0 and 2, subscribed on one channel.
	sub := rdb.Subscribe(ctx, ks[0].GrantChannel("c"))
	defer sub.Close()
	_, err = sub.Receive(ctx)
	require.NoError(t, err)
	for _, i := range []int{0, 2} {
		w := ks[i].Waiter(fmt.Sprintf("w%d", i), "c")
		res, err := ks[i].AcquireNew(ctx, rdb, fmt.Sprintf("waiter%d", i), testLease, w)
		require.NoError(t, err)
		require.False(t, res.Acquired)
	}

	holds := make([]SetHold, len(ks))
	for i, k := range ks {
		holds[i] = SetHold{Keys: k, Owner: "o", Token: tokens[i]}
	}
	res, err := ReleaseSet(ctx, rdb, holds, "rel-1")
	require.NoError(t, err)
	for _, r := range res {
		require.Equal(t, Released, r.Status)
	}
	require.Equal(t, "1", rdb.HGet(ctx, ks[0].Hash, "waiter0").Val())
	require.Zero(t, rdb.Exists(ctx, ks[1].Hash).Val())
	require.Equal(t, "1", rdb.HGet(ctx, ks[2].Hash, "waiter2").Val())
	for range 2 {
		_, err := sub.ReceiveMessage(ctx)
		require.NoError(t, err)
	}

	// A resend replays; a release under a stale token changes nothing.
	again, err := ReleaseSet(ctx, rdb, holds, "rel-1")
	require.NoError(t, err)
	require.Equal(t, res, again)
	stale, err := ReleaseSet(ctx, rdb, holds, "rel-2")
	require.NoError(t, err)
	for _, r := range stale {
		require.Equal(t, NotHeld, r.Status)
	}
}

// TestSetOneCall: a free set of 100 members is one script call, and so is
// its release.
func TestSetOneCall(t *testing.T) {
	ctx, rdb, _ := setup(t, "x")
	ks := setKeys(t, "one", 100)
	_, err := AcquireSet(ctx, rdb, ks[:1], "warm", "", testLease, true) // caches the script
	require.NoError(t, err)
	_, err = ReleaseSet(ctx, rdb, []SetHold{{Keys: ks[0], Owner: "warm", Token: currentToken(t, rdb, ks[0])}}, "warm")
	require.NoError(t, err)

	require.NoError(t, rdb.ConfigResetStat(ctx).Err())
	tokens, err := AcquireSet(ctx, rdb, ks, "o", "", testLease, true)
	require.NoError(t, err)
	require.Len(t, tokens, 100)
	requireScriptCalls(ctx, t, rdb, 1)
	holds := make([]SetHold, len(ks))
	for i, k := range ks {
		holds[i] = SetHold{Keys: k, Owner: "o", Token: tokens[i]}
	}
	require.NoError(t, rdb.ConfigResetStat(ctx).Err())
	_, err = ReleaseSet(ctx, rdb, holds, "rel")
	require.NoError(t, err)
	requireScriptCalls(ctx, t, rdb, 1)
	n, err := rdb.DBSize(ctx).Result()
	require.NoError(t, err)
	require.Equal(t, int64(102), n, "only the fencing counters and the two releases' request keys are left")
}

// requireScriptCalls checks that the server ran n script calls since its
// statistics were reset.
func requireScriptCalls(ctx context.Context, t *testing.T, rdb *redis.Client, n int64) {
	t.Helper()
	st, err := redistest.ReadCommandStats(ctx, rdb)
	require.NoError(t, err)
	require.Equal(t, n, st["evalsha"]+st["eval"])
}

// TestSetEmpty: an empty set is refused before any call.
func TestSetEmpty(t *testing.T) {
	_, err := AcquireSet(context.Background(), nil, nil, "o", "", testLease, true)
	require.ErrorIs(t, err, ErrEmptySet)
	_, err = ReleaseSet(context.Background(), nil, nil, "r")
	require.ErrorIs(t, err, ErrEmptySet)
}
