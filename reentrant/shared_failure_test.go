package reentrant

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// A grant publishes before it writes: a user whose ACL refuses the grant
// channel gets an error from the release, and the hold, the queue and the
// counter stay as they were, never a hold given to a waiter nobody told.
func TestSharedGrantPublishesBeforeItWrites(t *testing.T) {
	ctx, rdb, k := setupShared(t, KindSemaphore, "acl", 1)
	p := permits(t, k, 1)
	a, err := p.AcquireNew(ctx, rdb, "A", testLease, Waiter{})
	require.NoError(t, err)
	c := newClient(t, rdb, k, "c")
	c.enqueue(t, ctx, rdb, p, "B", c.waiter("b"))
	require.NoError(t, rdb.Do(ctx, "ACL", "SETUSER", "nochannel", "on", ">pw", "~*", "resetchannels", "+@all").Err())
	limited := redis.NewClient(&redis.Options{Addr: rdb.Options().Addr, Username: "nochannel", Password: "pw"})
	t.Cleanup(func() { _ = limited.Close() })

	_, err = p.Release(ctx, limited, "A", a.HoldID(), "rel")
	require.ErrorContains(t, err, "can't publish to the channel")
	require.Equal(t, map[string]int64{"p:A": 1}, holds(t, ctx, rdb, k), "A still holds")
	require.Equal(t, []string{"b"}, queued(t, ctx, rdb, k))
	require.Equal(t, a.Token, currentSharedToken(t, ctx, rdb, k), "no token was issued")
	rel, err := p.Release(ctx, rdb, "A", a.HoldID(), "rel-2")
	require.NoError(t, err)
	require.Equal(t, Released, rel.Status)
	require.Equal(t, "b", c.grants(t)[0].Waiter)
}

// currentSharedToken reads k's fencing counter.
func currentSharedToken(t *testing.T, ctx context.Context, rdb *redis.Client, k SharedKeys) uint64 {
	t.Helper()
	st, err := k.Inspect(ctx, rdb)
	require.NoError(t, err)
	return st.LastToken
}

// A node that refuses writes (a replica, such as a demoted master) fails
// a shared grant before it publishes (see TestNoGrantIsPublishedWhereWrites
// AreRefused): no waiter listening there hears of a grant never made.
func TestNoSharedGrantIsPublishedOnAReplica(t *testing.T) {
	ctx, master, replica := replicated(t)
	mdb, rdb := master.Client(), replica.Client()
	k := sharedKeys(t, Namespace{}, KindRW, "replica", 0)
	read, write := rw(t, k)
	w, err := write.AcquireNew(ctx, mdb, "W", testLease, Waiter{})
	require.NoError(t, err)
	c := newClient(t, rdb, k, "c")
	c.enqueue(t, ctx, mdb, read, "R", c.waiter("r"))
	require.EqualValues(t, 1, master.Admin().Wait(ctx, 1, 5*time.Second).Val(), "the holds reached the replica")

	for name, run := range map[string]func() error{
		"release": func() error {
			_, err := write.Release(ctx, rdb, "W", w.HoldID(), "rel")
			return err
		},
		"force release": func() error {
			_, _, err := k.ForceRelease(ctx, rdb, "force-shared_failure-1")
			return err
		},
	} {
		require.ErrorContains(t, run(), "READONLY", name)
		c.requireNoMessage(t, ctx, rdb)
	}
	require.Equal(t, map[string]int64{"w:W": 1}, holds(t, ctx, mdb, k))
	require.Equal(t, []string{"r"}, queued(t, ctx, mdb, k))
}

// A given owner's hold that ends does not let its owner's waiter queued
// behind a write in as a re-entry of that very hold: the write goes first.
func TestEndingHoldIsNotReenteredByItsOwnersWaiter(t *testing.T) {
	ctx, rdb, k := setupShared(t, KindRW, "own-waiter", 0)
	read, write := rw(t, k)
	w, err := write.AcquireNew(ctx, rdb, "W", testLease, Waiter{})
	require.NoError(t, err)
	c := newClient(t, rdb, k, "c")
	for _, q := range []struct {
		s     SharedMode
		owner string
		id    string
	}{{read, "O", "o1"}, {write, "W2", "w2"}, {read, "O", "o2"}} {
		r, err := q.s.Acquire(ctx, rdb, q.owner, "req-"+q.id, testLease, 0, c.waiter(q.id))
		require.NoError(t, err)
		require.False(t, r.Acquired)
	}
	_, err = write.Release(ctx, rdb, "W", w.HoldID(), "rel-w")
	require.NoError(t, err)
	g := c.grants(t)
	require.Equal(t, "o1", g[0].Waiter)
	require.Equal(t, []string{"w2", "o2"}, queued(t, ctx, rdb, k), "O holds a read, and its other call waits behind W2")

	_, err = read.Release(ctx, rdb, "O", g[0].HoldID(), "rel-o")
	require.NoError(t, err)
	g = c.grants(t)
	require.Len(t, g, 1)
	require.Equal(t, "w2", g[0].Waiter)
	require.Equal(t, map[string]int64{"w:W2": 1}, holds(t, ctx, rdb, k), "W2 alone")
	require.Equal(t, []string{"o2"}, queued(t, ctx, rdb, k))
}

// A shared resource's script's error names the file and line it comes from,
// though the shared library runs before the file.
func TestSharedScriptErrorsNameTheirFileAndLine(t *testing.T) {
	ctx, rdb, k := setupShared(t, KindRW, "errors", 0)
	_, write := rw(t, k)
	w, err := write.AcquireNew(ctx, rdb, "W", testLease, Waiter{})
	require.NoError(t, err)
	require.NoError(t, rdb.Set(ctx, k.Queue, "not a list", 0).Err())
	_, err = write.Release(ctx, rdb, "W", w.HoldID(), "rel")
	grant := luaFiles("shared_grant.lua")[0]
	at := "shared_grant.lua:" + strconv.Itoa(lineOf(t, grant, "redis.call('lrange', r.queue"))
	requireLocated(t, err, at, "WRONGTYPE")
	require.Contains(t, err.Error(), `reentrant: release rw "errors"`)
}
