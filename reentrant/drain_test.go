package reentrant

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// A queue with more dead entries ahead of a live waiter than one script
// drops (grantTries in grant.lua): whichever call frees the lock or finds
// it free, the oldest live waiter gets it, nobody takes it past the queue,
// and a queued caller leaves no record behind.

// deadAhead is how many dead entries the tests queue: more than two
// scripts' worth, so that neither the call that frees the lock nor the
// next one can get through them alone.
const deadAhead = 40

// grantModes are the three ways a grant judges a waiter dead (see
// grant.lua): nobody received PUBLISH on this node, nobody received
// SPUBLISH, or (where receivers may be elsewhere) its liveness key is gone.
var grantModes = []struct {
	name string
	ns   Namespace
}{
	{"publish", Namespace{}},
	{"spublish", Namespace{Sharded: true}},
	{"publish-alive", Namespace{ReceiversElsewhere: true}},
}

// forEachMode runs test once per grant mode, each on a server of its own.
func forEachMode(t *testing.T, name string, test func(t *testing.T, ctx context.Context, rdb *redis.Client, l Keys)) {
	for _, m := range grantModes {
		t.Run(m.name, func(t *testing.T) {
			ctx, rdb, _ := setup(t, name)
			l, err := m.ns.Keys(name)
			require.NoError(t, err)
			test(t, ctx, rdb, l)
		})
	}
}

// live subscribes waiter id's client to its grant channel, as the mode
// wants, and returns the subscription and the waiter.
func live(t *testing.T, rdb *redis.Client, l Keys, id string) (*redis.PubSub, Waiter) {
	t.Helper()
	w := l.Waiter(id, "c-"+id)
	sub := rdb.Subscribe(context.Background(), w.Channel)
	if l.publish == "spublish" {
		require.NoError(t, sub.Close())
		sub = rdb.SSubscribe(context.Background(), w.Channel)
	}
	t.Cleanup(func() { _ = sub.Close() })
	_, err := sub.Receive(context.Background())
	require.NoError(t, err)
	return sub, w
}

// queue makes waiter w of owner wait for the held lock.
func queue(t *testing.T, ctx context.Context, rdb *redis.Client, l Keys, owner string, w Waiter) {
	t.Helper()
	r, err := l.AcquireNew(ctx, rdb, owner, testLease, w)
	require.NoError(t, err)
	require.False(t, r.Acquired, "%s queues behind the holder", owner)
}

// queueDead queues n waiters whose clients are gone: nobody subscribes
// their channels, and their liveness keys (where the mode has them) have
// run out.
func queueDead(t *testing.T, ctx context.Context, rdb *redis.Client, l Keys, n int) {
	t.Helper()
	for i := range n {
		w := l.Waiter(fmt.Sprint("dead-", i), fmt.Sprint("gone-", i))
		queue(t, ctx, rdb, l, fmt.Sprint("D", i), w)
		if w.Alive != "" {
			require.NoError(t, rdb.Del(ctx, w.Alive).Err())
		}
	}
}

// queuedIDs lists the waiter IDs in the queue, oldest first.
func queuedIDs(t *testing.T, ctx context.Context, rdb *redis.Client, l Keys) []string {
	t.Helper()
	records, err := rdb.LRange(ctx, l.Queue, 0, -1).Result()
	require.NoError(t, err)
	ids := []string{}
	for _, rec := range records {
		ids = append(ids, strings.Fields(rec)[0])
	}
	return ids
}

// requireGrantedTo checks that the message on sub granted the lock to
// waiter id of owner, and that owner alone holds it.
func requireGrantedTo(t *testing.T, ctx context.Context, rdb *redis.Client, l Keys, sub *redis.PubSub, id, owner string) {
	t.Helper()
	g := receiveGrant(t, sub)
	require.Equal(t, id, g.Waiter)
	require.Equal(t, owner, g.Owner)
	st, err := l.Inspect(ctx, rdb)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{owner: 1}, st.Holders, "the live waiter holds it, nobody else")
	require.Equal(t, g.Token, st.LastToken)
}

// holdWithDeadAhead has A hold the lock with deadAhead dead waiters queued,
// then the live waiter "live" of owner L; it returns A's token and L's
// subscription.
func holdWithDeadAhead(t *testing.T, ctx context.Context, rdb *redis.Client, l Keys) (uint64, *redis.PubSub) {
	t.Helper()
	a, err := l.AcquireNew(ctx, rdb, "A", testLease, Waiter{})
	require.NoError(t, err)
	queueDead(t, ctx, rdb, l, deadAhead)
	sub, w := live(t, rdb, l, "live")
	queue(t, ctx, rdb, l, "L", w)
	return a.Token, sub
}

func TestReleaseGetsPastManyDeadWaiters(t *testing.T) {
	forEachMode(t, "drain-release", func(t *testing.T, ctx context.Context, rdb *redis.Client, l Keys) {
		token, sub := holdWithDeadAhead(t, ctx, rdb, l)
		rel, err := l.Release(ctx, rdb, "A", token, "rel-a")
		require.NoError(t, err)
		require.Equal(t, Released, rel.Status)
		requireGrantedTo(t, ctx, rdb, l, sub, "live", "L")
		require.Empty(t, queuedIDs(t, ctx, rdb, l))

		// A resent release replays: it grants nothing twice.
		rel, err = l.Release(ctx, rdb, "A", token, "rel-a")
		require.NoError(t, err)
		require.Equal(t, Released, rel.Status)
		st, err := l.Inspect(ctx, rdb)
		require.NoError(t, err)
		require.Equal(t, map[string]int64{"L": 1}, st.Holders)
	})
}

func TestForceReleaseGetsPastManyDeadWaiters(t *testing.T) {
	forEachMode(t, "drain-force", func(t *testing.T, ctx context.Context, rdb *redis.Client, l Keys) {
		token, sub := holdWithDeadAhead(t, ctx, rdb, l)
		deleted, err := l.ForceRelease(ctx, rdb, "force-drain-1")
		require.NoError(t, err)
		require.Equal(t, token, deleted)
		requireGrantedTo(t, ctx, rdb, l, sub, "live", "L")
		require.Empty(t, queuedIDs(t, ctx, rdb, l))
	})
}

// A waiter granted the lock gives up before it hears: its leave passes the
// lock on, past the dead entries behind it.
func TestLeaveGetsPastManyDeadWaiters(t *testing.T) {
	forEachMode(t, "drain-leave", func(t *testing.T, ctx context.Context, rdb *redis.Client, l Keys) {
		a, err := l.AcquireNew(ctx, rdb, "A", testLease, Waiter{})
		require.NoError(t, err)
		subW, w := live(t, rdb, l, "first")
		queue(t, ctx, rdb, l, "W", w)
		queueDead(t, ctx, rdb, l, deadAhead)
		sub, wL := live(t, rdb, l, "live")
		queue(t, ctx, rdb, l, "L", wL)
		_, err = l.Release(ctx, rdb, "A", a.Token, "rel-a")
		require.NoError(t, err)
		require.Equal(t, "first", receiveGrant(t, subW).Waiter)

		passed, err := l.Leave(ctx, rdb, w, "W", testLease, true)
		require.NoError(t, err)
		require.True(t, passed)
		requireGrantedTo(t, ctx, rdb, l, sub, "live", "L")
		require.Empty(t, queuedIDs(t, ctx, rdb, l))
	})
}

// A lock whose holder's lease ran out, with dead waiters ahead of a live
// one: a call that does not queue (TryLock) must not take it, however many
// entries it has to drop, and the live waiter gets it.
func TestFreeLockIsNotTakenPastDeadWaiters(t *testing.T) {
	forEachMode(t, "drain-trylock", func(t *testing.T, ctx context.Context, rdb *redis.Client, l Keys) {
		_, sub := holdWithDeadAhead(t, ctx, rdb, l)
		require.NoError(t, rdb.Del(ctx, l.Hash).Err()) // A's lease ran out
		r, err := l.AcquireNew(ctx, rdb, "T", testLease, Waiter{})
		require.NoError(t, err)
		require.False(t, r.Acquired, "T barged past the queue")
		requireGrantedTo(t, ctx, rdb, l, sub, "live", "L")
		require.Empty(t, queuedIDs(t, ctx, rdb, l))
	})
}

// With only dead waiters queued, the lock is free for the taking: a call
// that does not queue drops them all and takes it.
func TestFreeLockWithOnlyDeadWaitersIsTaken(t *testing.T) {
	forEachMode(t, "drain-dead", func(t *testing.T, ctx context.Context, rdb *redis.Client, l Keys) {
		_, err := l.AcquireNew(ctx, rdb, "A", testLease, Waiter{})
		require.NoError(t, err)
		queueDead(t, ctx, rdb, l, deadAhead)
		require.NoError(t, rdb.Del(ctx, l.Hash).Err())
		r, err := l.Acquire(ctx, rdb, "T", "t-1", testLease, 0, Waiter{})
		require.NoError(t, err)
		require.True(t, r.Acquired)
		require.Empty(t, queuedIDs(t, ctx, rdb, l))
		st, err := l.Inspect(ctx, rdb)
		require.NoError(t, err)
		require.Equal(t, map[string]int64{"T": 1}, st.Holders)
	})
}

// A queued waiter further back looks and finds the lock free: it takes it
// only when the entries ahead of it were all dead, and either way it stays
// in the queue exactly as long as it waits.
func TestQueuedWaiterBehindDeadOnesKeepsItsPlace(t *testing.T) {
	forEachMode(t, "drain-look", func(t *testing.T, ctx context.Context, rdb *redis.Client, l Keys) {
		_, sub := holdWithDeadAhead(t, ctx, rdb, l)
		_, wC := live(t, rdb, l, "back")
		queue(t, ctx, rdb, l, "C", wC)
		require.NoError(t, rdb.Del(ctx, l.Hash).Err())

		r, err := l.AcquireNew(ctx, rdb, "C", testLease, wC) // C looks
		require.NoError(t, err)
		require.False(t, r.Acquired, "C barged past the live waiter")
		require.Positive(t, r.HolderTTL)
		requireGrantedTo(t, ctx, rdb, l, sub, "live", "L")
		require.Equal(t, []string{"back"}, queuedIDs(t, ctx, rdb, l), "C still waits, once")

		// C gives up; another waiter with only dead entries ahead takes
		// the lock with its own look.
		passed, err := l.Leave(ctx, rdb, wC, "C", testLease, true)
		require.NoError(t, err)
		require.False(t, passed)
		queueDead(t, ctx, rdb, l, deadAhead)
		_, wE := live(t, rdb, l, "end")
		queue(t, ctx, rdb, l, "E", wE)
		require.NoError(t, rdb.Del(ctx, l.Hash).Err())
		r, err = l.AcquireNew(ctx, rdb, "E", testLease, wE)
		require.NoError(t, err)
		require.True(t, r.Acquired)
		require.Empty(t, queuedIDs(t, ctx, rdb, l), "E left no record behind")
		st, err := l.Inspect(ctx, rdb)
		require.NoError(t, err)
		require.Equal(t, map[string]int64{"E": 1}, st.Holders)
	})
}

// One call drops at most drainPasses runs' worth of dead entries, so that
// a long queue of them costs each call a bounded time: a release that
// finds more leaves the lock free behind the rest, a call that does not
// queue reports Draining, having taken nothing, and each next call goes
// on where the last stopped.
func TestDrainingIsBounded(t *testing.T) {
	ctx, rdb, l := setup(t, "drain-bound")
	m := regexp.MustCompile(`local grantTries = (\d+)`).FindStringSubmatch(luaFiles("grant.lua")[0].text)
	require.NotNil(t, m)
	tries, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	perCall := drainPasses * tries
	const beyond = 5
	// junk queues n entries no grant can read, which it drops as dead.
	junk := func(n int) {
		entries := make([]any, n)
		for i := range entries {
			entries[i] = fmt.Sprint("junk-", i)
		}
		require.NoError(t, rdb.RPush(ctx, l.Queue, entries...).Err())
	}

	a, err := l.AcquireNew(ctx, rdb, "A", testLease, Waiter{})
	require.NoError(t, err)
	junk(tries + perCall + beyond) // the release's own run, then its passes
	sub, w := live(t, rdb, l, "live")
	queue(t, ctx, rdb, l, "L", w)
	rel, err := l.Release(ctx, rdb, "A", a.Token, "rel-a")
	require.NoError(t, err)
	require.Equal(t, Released, rel.Status)
	require.Zero(t, rdb.Exists(ctx, l.Hash).Val(), "free behind the rest")
	require.EqualValues(t, beyond+1, rdb.LLen(ctx, l.Queue).Val())
	r, err := l.AcquireNew(ctx, rdb, "T", testLease, Waiter{})
	require.NoError(t, err)
	require.Equal(t, AcquireResult{HolderTTL: r.HolderTTL}, r)
	require.Positive(t, r.HolderTTL)
	requireGrantedTo(t, ctx, rdb, l, sub, "live", "L")

	junk(perCall + beyond)
	sub2, w2 := live(t, rdb, l, "live-2")
	queue(t, ctx, rdb, l, "L2", w2)
	require.NoError(t, rdb.Del(ctx, l.Hash).Err())
	r, err = l.AcquireNew(ctx, rdb, "T", testLease, Waiter{})
	require.NoError(t, err)
	require.Equal(t, AcquireResult{Draining: true}, r)
	require.Zero(t, rdb.Exists(ctx, l.Hash).Val(), "nothing taken")
	require.EqualValues(t, beyond+1, rdb.LLen(ctx, l.Queue).Val())
	r, err = l.AcquireNew(ctx, rdb, "T", testLease, Waiter{})
	require.NoError(t, err)
	require.False(t, r.Acquired)
	requireGrantedTo(t, ctx, rdb, l, sub2, "live-2", "L2")
}
