package reentrant

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/bench/redistest/redisproc"
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

	res, err := AcquireSet(ctx, rdb, ks, "o", "", testLease, true, Waiter{})
	require.NoError(t, err)
	require.False(t, res.Queued)
	tokens := res.Tokens
	require.Len(t, tokens, 2)
	for i, tok := range tokens {
		require.Equal(t, tok, currentToken(t, rdb, ks[i]))
		require.Equal(t, "1", rdb.HGet(ctx, ks[i].Hash, "o").Val())
	}
	require.Zero(t, rdb.Exists(ctx, ks[3].Hash).Val(), "a member past the held one was taken")

	// A resend of the call counts the members it holds as taken.
	again, err := AcquireSet(ctx, rdb, ks, "o", "", testLease, true, Waiter{})
	require.NoError(t, err)
	require.Equal(t, tokens, again.Tokens)
}

// TestAcquireSetReplay: with a given owner, a resent call replays the
// first one's reply, whatever changed since.
func TestAcquireSetReplay(t *testing.T) {
	ctx, rdb, _ := setup(t, "x")
	ks := setKeys(t, "r", 3)
	res, err := AcquireSet(ctx, rdb, ks, "given", "req-1", testLease, false, Waiter{})
	require.NoError(t, err)
	require.Len(t, res.Tokens, 3)
	again, err := AcquireSet(ctx, rdb, ks, "given", "req-1", testLease, false, Waiter{})
	require.NoError(t, err)
	require.Equal(t, res, again)
	for _, k := range ks {
		require.Equal(t, "1", rdb.HGet(ctx, k.Hash, "given").Val(), "a replay counted a hold again")
	}
}

// TestReleaseSetHandsEachKeyOn: one release of a set hands each member to
// its own next waiter, one grant message each, and frees the others.
func TestReleaseSetHandsEachKeyOn(t *testing.T) {
	ctx, rdb, _ := setup(t, "x")
	ks := setKeys(t, "h", 3)
	set, err := AcquireSet(ctx, rdb, ks, "o", "", testLease, true, Waiter{})
	require.NoError(t, err)
	tokens := set.Tokens
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
	_, err := AcquireSet(ctx, rdb, ks[:1], "warm", "", testLease, true, Waiter{}) // caches the script
	require.NoError(t, err)
	_, err = ReleaseSet(ctx, rdb, []SetHold{{Keys: ks[0], Owner: "warm", Token: currentToken(t, rdb, ks[0])}}, "warm")
	require.NoError(t, err)

	require.NoError(t, rdb.ConfigResetStat(ctx).Err())
	set, err := AcquireSet(ctx, rdb, ks, "o", "", testLease, true, Waiter{})
	require.NoError(t, err)
	tokens := set.Tokens
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
	_, err := AcquireSet(context.Background(), nil, nil, "o", "", testLease, true, Waiter{})
	require.ErrorIs(t, err, ErrEmptySet)
	_, err = ReleaseSet(context.Background(), nil, nil, "r")
	require.ErrorIs(t, err, ErrEmptySet)
}

// TestAcquireSetQueuesWaiter: with a waiter, the set script queues it at
// the member it stops at, once however often it runs, and not where its
// owner holds the member already (a re-entry does not queue); in a
// namespace whose waiters are each one lock's, it refuses the waiter.
func TestAcquireSetQueuesWaiter(t *testing.T) {
	ctx, rdb, _ := setup(t, "x")
	ks := setKeys(t, "q", 3)
	held, err := ks[1].Acquire(ctx, rdb, "given", "hold", testLease, 0, Waiter{})
	require.NoError(t, err)
	require.True(t, held.Acquired)
	w := ks[0].Waiter("w1", "c")
	for range 2 {
		res, err := AcquireSet(ctx, rdb, ks, "o", "", testLease, true, w)
		require.NoError(t, err)
		require.True(t, res.Queued)
		require.Len(t, res.Tokens, 1)
		require.Greater(t, res.HolderTTL, time.Duration(0))
		require.EqualValues(t, 1, rdb.LLen(ctx, ks[1].Queue).Val())
	}
	require.Zero(t, rdb.Exists(ctx, ks[2].Hash).Val(), "a member past the queued one was taken")

	res, err := AcquireSet(ctx, rdb, ks[1:], "given", "req", testLease, false, ks[1].Waiter("w2", "c"))
	require.NoError(t, err)
	require.False(t, res.Queued, "the owner holding the member queued behind itself")
	require.EqualValues(t, 1, rdb.LLen(ctx, ks[1].Queue).Val())

	sharded, err := Namespace{Sharded: true}.Keys("q-0")
	require.NoError(t, err)
	_, err = AcquireSet(ctx, rdb, []Keys{sharded}, "o", "", testLease, true, sharded.Waiter("w3", "c"))
	require.ErrorIs(t, err, ErrSetWaiter)
}

// BenchmarkSetServerTime reports the server time of a free set's acquire
// and release, per call and per member, for sets of 1, 10, 100 and 1,000
// members: what a set costs the server beside a single lock's free path
// (BenchmarkFreePathServerTime).
func BenchmarkSetServerTime(b *testing.B) {
	ctx := context.Background()
	rdb := redistest.Start(b).Client()
	warm, err := Namespace{}.Keys("warm")
	require.NoError(b, err)
	res, err := AcquireSet(ctx, rdb, []Keys{warm}, "o", "", testLease, true, Waiter{}) // caches the scripts
	require.NoError(b, err)
	_, err = ReleaseSet(ctx, rdb, []SetHold{{Keys: warm, Owner: "o", Token: res.Tokens[0]}}, "warm")
	require.NoError(b, err)
	for _, n := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("members-%d", n), func(b *testing.B) {
			ks := make([]Keys, n)
			for i := range ks {
				ks[i], _ = Namespace{}.Keys(fmt.Sprintf("bench-%d", i))
			}
			var acquire, release float64
			for i := range b.N {
				before, err := redisproc.ReadCommands(ctx, rdb)
				require.NoError(b, err)
				res, err := AcquireSet(ctx, rdb, ks, "o", "", testLease, true, Waiter{})
				require.NoError(b, err)
				mid, err := redisproc.ReadCommands(ctx, rdb)
				require.NoError(b, err)
				holds := make([]SetHold, n)
				for j, k := range ks {
					holds[j] = SetHold{Keys: k, Owner: "o", Token: res.Tokens[j]}
				}
				_, err = ReleaseSet(ctx, rdb, holds, fmt.Sprintf("rel-%d-%d", n, i))
				require.NoError(b, err)
				after, err := redisproc.ReadCommands(ctx, rdb)
				require.NoError(b, err)
				acquire += float64(mid.Sub(before).Usec["evalsha"] + mid.Sub(before).Usec["eval"])
				release += float64(after.Sub(mid).Usec["evalsha"] + after.Sub(mid).Usec["eval"])
			}
			b.ReportMetric(acquire/float64(b.N), "acquire-µs")
			b.ReportMetric(release/float64(b.N), "release-µs")
			b.ReportMetric((acquire+release)/float64(b.N*n), "µs/member")
		})
	}
}
