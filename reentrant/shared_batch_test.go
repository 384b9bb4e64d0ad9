package reentrant

import (
	"context"
	"fmt"
	"sort"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// commandsDuring counts the commands the server ran during run, scripts'
// own included, by name; INFO (the counting itself) left out.
func commandsDuring(t *testing.T, ctx context.Context, rdb *redis.Client, run func()) map[string]int64 {
	t.Helper()
	before, err := redistest.ReadCommandStats(ctx, rdb)
	require.NoError(t, err)
	run()
	after, err := redistest.ReadCommandStats(ctx, rdb)
	require.NoError(t, err)
	diff := map[string]int64{}
	for name, n := range after {
		if d := n - before[name]; d > 0 && name != "info" {
			diff[name] = d
		}
	}
	return diff
}

// total sums counts, less those of the commands named.
func total(counts map[string]int64, except ...string) int64 {
	var n int64
	for _, c := range counts {
		n += c
	}
	for _, name := range except {
		n -= counts[name]
	}
	return n
}

// A write's release admits every read queued behind it, k of them, in one
// script run, with one message per client (each addressed to all its
// waiters); the release's other commands do not grow with k.
func TestRWWriteReleaseAdmitsAllQueuedReadsInOneRun(t *testing.T) {
	ctx, rdb, _ := setup(t, "batch")
	require.NoError(t, sharedReleaseScript.Load(ctx, rdb).Err(), "no EVAL after a NOSCRIPT in the counts")
	others := map[int]int64{}
	for _, n := range []int{1, 10, 100} {
		k := sharedKeys(t, Namespace{}, KindRW, fmt.Sprint("batch-", n), 0)
		read, write := rw(t, k)
		w, err := write.AcquireNew(ctx, rdb, "W", testLease, Waiter{})
		require.NoError(t, err)
		clients := []*client{newClient(t, rdb, k, fmt.Sprint("a", n)), newClient(t, rdb, k, fmt.Sprint("b", n)),
			newClient(t, rdb, k, fmt.Sprint("c", n))}[:min(n, 3)]
		want := map[*client][]string{}
		for i, id := range ids("r", n) {
			c := clients[i%len(clients)]
			c.enqueue(t, ctx, rdb, read, "R-"+id, c.waiter(id))
			want[c] = append(want[c], id)
		}
		c2 := newClient(t, rdb, k, "late")
		c2.enqueue(t, ctx, rdb, write, "W2", c2.waiter("w2"))

		counts := commandsDuring(t, ctx, rdb, func() {
			rel, err := write.Release(ctx, rdb, "W", w.HoldID(), "rel")
			require.NoError(t, err)
			require.Equal(t, Released, rel.Status)
		})
		require.EqualValues(t, 1, counts["evalsha"], "one script run: %v", counts)
		require.EqualValues(t, len(clients), counts["publish"], "one message per client")
		for c, ids := range want {
			var got []string
			for _, g := range c.grants(t) {
				require.Equal(t, w.Token, g.Token)
				require.Equal(t, "R-"+g.Waiter, g.Owner)
				got = append(got, g.Waiter)
			}
			sort.Strings(got)
			sort.Strings(ids)
			require.Equal(t, ids, got, "one message to each of %s's waiters", c.name)
			c.requireNoMessage(t, ctx, rdb)
		}
		st, err := k.Inspect(ctx, rdb)
		require.NoError(t, err)
		require.Len(t, st.Holds, n)
		require.EqualValues(t, n, st.Used)
		require.Equal(t, []string{"w2"}, queued(t, ctx, rdb, k), "the write behind them waits")
		others[n] = total(counts, "publish", "evalsha")
		t.Logf("k=%d: %d commands besides EVALSHA and %d PUBLISH: %v", n, others[n], counts["publish"], counts)
	}
	// Reading and parsing the queue grow by a read and an HMGET per
	// factor of four (see parseQueue in shared_grant.lua); nothing else
	// grows with k.
	require.LessOrEqual(t, others[100], others[10]+4)
	require.LessOrEqual(t, others[10], others[1]+4)
}
