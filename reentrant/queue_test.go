package reentrant

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The baton pass in the scripts: waiters queue in arrival order, a release
// grants the oldest live one in the same script, a dead one costs one
// skipped entry, nobody barges past the queue, and every step replays
// under a resend.
func TestReleaseGrantsTheOldestLiveWaiter(t *testing.T) {
	ctx, rdb, l := setup(t, "queue")
	a, err := l.AcquireNew(ctx, rdb, "A", testLease, Waiter{})
	require.NoError(t, err)

	subB, wB := subscribed(t, rdb, l, "b")
	_, wDead := subscribed(t, rdb, l, "dead")
	_, wC := subscribed(t, rdb, l, "c")
	for _, q := range []struct {
		owner string
		w     Waiter
	}{{"B", wB}, {"D", wDead}, {"C", wC}} {
		for range 2 { // a resent enqueue queues once
			r, err := l.AcquireNew(ctx, rdb, q.owner, testLease, q.w)
			require.NoError(t, err)
			require.False(t, r.Acquired)
			require.Positive(t, r.HolderTTL)
		}
	}
	records, err := rdb.LRange(ctx, l.Queue, 0, -1).Result()
	require.NoError(t, err)
	var ids []string
	for _, rec := range records {
		ids = append(ids, strings.Fields(rec)[0])
	}
	require.Equal(t, []string{"b", "dead", "c"}, ids, "arrival order, each once")

	// TryLock (no waiter) does not barge, nor queue.
	r, err := l.AcquireNew(ctx, rdb, "E", testLease, Waiter{})
	require.NoError(t, err)
	require.False(t, r.Acquired)

	rel, err := l.Release(ctx, rdb, "A", a.Token, "rel-a")
	require.NoError(t, err)
	require.Equal(t, Released, rel.Status)
	g := receiveGrant(t, subB)
	require.Equal(t, "b", g.Waiter)
	require.Equal(t, "B", g.Owner)
	require.Equal(t, "queue", g.Lock)
	require.Greater(t, g.Token, a.Token)
	r, err = l.AcquireNew(ctx, rdb, "B", testLease, wB) // B's re-check reports, counts nothing
	require.NoError(t, err)
	require.Equal(t, AcquireResult{Acquired: true, HoldCount: 1, Token: g.Token, Reported: true, Claimed: true}, r)

	// The dead waiter's client is gone: the next release skips it.
	require.NoError(t, rdb.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err())
	subC, _ := subscribed(t, rdb, l, "c") // C's client comes back and re-subscribes
	rel, err = l.Release(ctx, rdb, "B", g.Token, "rel-b")
	require.NoError(t, err)
	require.Equal(t, Released, rel.Status)
	g = receiveGrant(t, subC)
	require.Equal(t, "c", g.Waiter, "the dead waiter was skipped")
	n, err := rdb.LLen(ctx, l.Queue).Result()
	require.NoError(t, err)
	require.Zero(t, n)

	// A replayed release grants nothing twice.
	rel, err = l.Release(ctx, rdb, "B", g.Token-1, "rel-b")
	require.NoError(t, err)
	require.Equal(t, Released, rel.Status)
	st, err := l.Inspect(ctx, rdb)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"C": 1}, st.Holders)
}

// A holder that expires with a queue behind it: the first waiter to look
// again grants the head, which may be itself.
func TestExpiredHolderIsPassedOnByTheNextLook(t *testing.T) {
	ctx, rdb, l := setup(t, "expired")
	_, err := l.AcquireNew(ctx, rdb, "A", testLease, Waiter{})
	require.NoError(t, err)
	subB, wB := subscribed(t, rdb, l, "b")
	_, wC := subscribed(t, rdb, l, "c")
	for owner, w := range map[string]Waiter{"B": wB} {
		_, err := l.AcquireNew(ctx, rdb, owner, testLease, w)
		require.NoError(t, err)
	}
	_, err = l.AcquireNew(ctx, rdb, "C", testLease, wC)
	require.NoError(t, err)
	require.NoError(t, rdb.Del(ctx, l.Hash).Err()) // the lease ran out

	r, err := l.AcquireNew(ctx, rdb, "C", testLease, wC) // C looks first
	require.NoError(t, err)
	require.False(t, r.Acquired, "C is behind B")
	g := receiveGrant(t, subB)
	require.Equal(t, "b", g.Waiter)

	require.NoError(t, rdb.Del(ctx, l.Hash).Err())
	r, err = l.AcquireNew(ctx, rdb, "C", testLease, wC) // now C is the head
	require.NoError(t, err)
	require.True(t, r.Acquired, "the head's own look takes it, with no message")
}

// A waiter that gives up leaves the queue; one granted meanwhile passes the
// lock on in the same script. Leaving twice is harmless.
func TestLeave(t *testing.T) {
	ctx, rdb, l := setup(t, "leave")
	a, err := l.AcquireNew(ctx, rdb, "A", testLease, Waiter{})
	require.NoError(t, err)
	_, wB := subscribed(t, rdb, l, "b")
	subC, wC := subscribed(t, rdb, l, "c")
	_, err = l.AcquireNew(ctx, rdb, "B", testLease, wB)
	require.NoError(t, err)
	_, err = l.AcquireNew(ctx, rdb, "C", testLease, wC)
	require.NoError(t, err)

	_, err = l.Release(ctx, rdb, "A", a.Token, "rel")
	require.NoError(t, err) // B is granted, but gives up before it hears
	for i := range 2 {
		passed, err := l.Leave(ctx, rdb, wB, "B", testLease, true)
		require.NoError(t, err)
		require.Equal(t, i == 0, passed, "leave %d", i)
	}
	g := receiveGrant(t, subC)
	require.Equal(t, "c", g.Waiter)

	_, wD := subscribed(t, rdb, l, "d")
	_, err = l.AcquireNew(ctx, rdb, "D", testLease, wD)
	require.NoError(t, err)
	passed, err := l.Leave(ctx, rdb, wD, "D", testLease, true)
	require.NoError(t, err)
	require.False(t, passed)
	require.Zero(t, rdb.LLen(ctx, l.Queue).Val())

	// A given owner's waiter passes on only the grant that was its own:
	// its owner may hold the lock through another of its calls.
	subS1, wS1 := subscribed(t, rdb, l, "s1")
	_, wS2 := subscribed(t, rdb, l, "s2")
	r, err := l.Acquire(ctx, rdb, "S", "s1-look", testLease, 0, wS1)
	require.NoError(t, err)
	require.False(t, r.Acquired)
	_, err = l.Release(ctx, rdb, "C", g.Token, "rel-c")
	require.NoError(t, err)
	gS := receiveGrant(t, subS1)
	require.Equal(t, "s1", gS.Waiter)
	passed, err = l.Leave(ctx, rdb, wS2, "S", testLease, false) // never queued, never granted
	require.NoError(t, err)
	require.False(t, passed)
	require.Equal(t, "1", rdb.HGet(ctx, l.Hash, "S").Val(), "the other call's grant stays")
	passed, err = l.Leave(ctx, rdb, wS1, "S", testLease, false)
	require.NoError(t, err)
	require.True(t, passed, "its own grant is passed on")
	require.Zero(t, rdb.Exists(ctx, l.Hash).Val())
}

// Where the receiver count cannot judge liveness (ReceiversElsewhere), the
// waiter's liveness key does. A waiter whose key exists is granted even
// though no receiver on this node counted the message: it may listen on
// another node, and a grant sent cannot be taken back. A waiter whose key
// has expired since its last look is skipped, unpublished.
func TestLivenessKeysJudgeWhereTheCountCannot(t *testing.T) {
	ctx, rdb, _ := setup(t, "alive")
	const aliveTTL = 300 * time.Millisecond
	l, err := Namespace{ReceiversElsewhere: true, AliveTTL: aliveTTL}.Keys("alive")
	require.NoError(t, err)
	require.Equal(t, aliveTTL, l.AliveTTL())
	plain, err := Namespace{}.Keys("alive")
	require.NoError(t, err)
	require.Zero(t, plain.AliveTTL())
	require.Empty(t, plain.Waiter("x", "c").Alive)

	holder, err := l.AcquireNew(ctx, rdb, "H", testLease, Waiter{})
	require.NoError(t, err)
	// Nobody listens on the first waiter's channel on this node.
	elsewhere := l.Waiter("elsewhere", "c-elsewhere")
	require.Equal(t, l.AliveKey("c-elsewhere"), elsewhere.Alive)
	_, err = l.AcquireNew(ctx, rdb, "E", testLease, elsewhere)
	require.NoError(t, err)
	ttl := rdb.PTTL(ctx, elsewhere.Alive).Val()
	require.True(t, ttl > 0 && ttl <= aliveTTL, "the look set the liveness key for %v: %v", aliveTTL, ttl)
	before := publishes(t, rdb)
	_, err = l.Release(ctx, rdb, "H", holder.Token, "rel-h")
	require.NoError(t, err)
	require.Equal(t, before+1, publishes(t, rdb))
	st, err := l.Inspect(ctx, rdb)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"E": 1}, st.Holders, "granted on its liveness key, with no receiver counted")
	require.True(t, st.TTL > 0 && st.TTL <= aliveTTL, "until confirmed, the grant's lease is the key's TTL: %v", st.TTL)
	r, err := l.AcquireNew(ctx, rdb, "E", testLease, elsewhere) // E's look confirms it
	require.NoError(t, err)
	require.Equal(t, AcquireResult{Acquired: true, HoldCount: 1, Token: st.LastToken, Reported: true, Claimed: true}, r)
	require.Greater(t, rdb.PTTL(ctx, l.Hash).Val(), aliveTTL, "confirmed: the lease it asked for")

	// Now a crashed waiter: it looked once, then its key ran out.
	crashed := l.Waiter("crashed", "c-crashed")
	_, err = l.AcquireNew(ctx, rdb, "C", testLease, crashed)
	require.NoError(t, err)
	sub, live := subscribed(t, rdb, l, "live")
	live = l.Waiter(live.ID, "c-live")
	_, err = l.AcquireNew(ctx, rdb, "L", testLease, live)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return rdb.Exists(ctx, crashed.Alive).Val() == 0 }, 5*time.Second, 10*time.Millisecond)
	_, err = l.AcquireNew(ctx, rdb, "L", testLease, live) // the live waiter's look keeps its key
	require.NoError(t, err)
	before = publishes(t, rdb)
	_, err = l.Release(ctx, rdb, "E", st.LastToken, "rel-e")
	require.NoError(t, err)
	require.Equal(t, before+1, publishes(t, rdb), "one message, to the live waiter only")
	g := receiveGrant(t, sub)
	require.Equal(t, "live", g.Waiter, "the crashed waiter was skipped")
	require.Equal(t, aliveTTL, g.Unconfirmed)
	require.Zero(t, rdb.LLen(ctx, l.Queue).Val())

	// A waiter that crashed while its key still lived is granted, but
	// holds the lock only until the unconfirmed lease runs out.
	crashed = l.Waiter("crashed-2", "c-crashed-2")
	_, err = l.AcquireNew(ctx, rdb, "C2", testLease, crashed)
	require.NoError(t, err)
	_, err = l.Release(ctx, rdb, "L", g.Token, "rel-l")
	require.NoError(t, err)
	st, err = l.Inspect(ctx, rdb)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"C2": 1}, st.Holders)
	require.True(t, st.TTL > 0 && st.TTL <= aliveTTL, "not its 10s lease: %v", st.TTL)
}

// A queue record holds the waiter's owner, channel and liveness key as they
// are, whatever bytes they contain, and the grant reads them back, with the
// lock's name: invalid UTF-8 too, which encoding/json would replace.
func TestQueueRecordsKeepAnyOwner(t *testing.T) {
	ctx, rdb, _ := setup(t, "records")
	for _, ns := range []Namespace{{Prefix: "my app: "}, {Prefix: "x ", ReceiversElsewhere: true}} {
		l, err := ns.Keys("rec\xffords")
		require.NoError(t, err)
		a, err := l.AcquireNew(ctx, rdb, "A", testLease, Waiter{})
		require.NoError(t, err)
		const owner = "job 7 \n\n 1 0 5 %d\x00 end \xfe"
		w := l.Waiter("w1", "client-1")
		sub := rdb.Subscribe(ctx, w.Channel)
		_, err = sub.Receive(ctx)
		require.NoError(t, err)
		_, err = l.Acquire(ctx, rdb, owner, "look", testLease, 0, w)
		require.NoError(t, err)
		_, err = l.Release(ctx, rdb, "A", a.Token, "rel")
		require.NoError(t, err)
		g := receiveGrant(t, sub)
		require.Equal(t, owner, g.Owner)
		require.Equal(t, l.Name, g.Lock)
		st, err := l.Inspect(ctx, rdb)
		require.NoError(t, err)
		require.Equal(t, map[string]int64{owner: 1}, st.Holders)
		require.NoError(t, sub.Close())
	}
}

// An entry the grant cannot read (one written by another version of baton)
// is dropped like a dead waiter's, and the lock goes to the next.
func TestUnreadableQueueEntryIsSkipped(t *testing.T) {
	ctx, rdb, l := setup(t, "unreadable")
	a, err := l.AcquireNew(ctx, rdb, "A", testLease, Waiter{})
	require.NoError(t, err)
	require.NoError(t, rdb.RPush(ctx, l.Queue, "0123456789abcdef").Err())
	sub, w := subscribed(t, rdb, l, "next")
	_, err = l.AcquireNew(ctx, rdb, "N", testLease, w)
	require.NoError(t, err)
	_, err = l.Release(ctx, rdb, "A", a.Token, "rel")
	require.NoError(t, err)
	require.Equal(t, "next", receiveGrant(t, sub).Waiter)
	require.Zero(t, rdb.LLen(ctx, l.Queue).Val())
}

// Tokens rise with every grant, as with every acquire.
func TestGrantTokensRise(t *testing.T) {
	ctx, rdb, l := setup(t, "tokens")
	r, err := l.AcquireNew(ctx, rdb, "o0", testLease, Waiter{})
	require.NoError(t, err)
	last, owner := r.Token, "o0"
	for i := 1; i <= 20; i++ {
		sub, w := subscribed(t, rdb, l, fmt.Sprint("w", i))
		next := fmt.Sprint("o", i)
		_, err := l.AcquireNew(ctx, rdb, next, testLease, w)
		require.NoError(t, err)
		_, err = l.Release(ctx, rdb, owner, last, fmt.Sprint("r", i))
		require.NoError(t, err)
		g := receiveGrant(t, sub)
		require.Greater(t, g.Token, last)
		last, owner = g.Token, next
	}
}

func TestParseGrantRejectsOtherMessages(t *testing.T) {
	for _, msg := range []string{"", "w1", "w1 {}", `w1 {"t":"x","o":"A","k":"baton:{n}"}`, `w1 {"t":"1","o":"A","k":"nobrace"}`, ` {"t":"1","o":"A","k":"b:{n}"}`} {
		_, err := ParseGrant(msg)
		require.Error(t, err, "%q", msg)
	}
	g, err := ParseGrant(`w1 {"t":"1795476559178986","o":"job 7","k":"app:{a b}"}`)
	require.NoError(t, err)
	require.Equal(t, Grant{Waiter: "w1", Lock: "a b", Token: 1795476559178986, Owner: "job 7"}, g)
	g, err = ParseGrant(`w2 {"t":"7","o":"B","k":"app:{n}","u":150}`)
	require.NoError(t, err)
	require.Equal(t, Grant{Waiter: "w2", Lock: "n", Token: 7, Owner: "B", Unconfirmed: 150 * time.Millisecond}, g)
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
