package reentrant

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A lease runs out by the server clock: the deadline is the server's TIME
// plus the lease, the keys expire with the last deadline, and a holder that
// stops renewing frees its part then, though others still hold: a waiter's
// look at the first deadline (the wait its acquire reported) grants it,
// with no further delay.
func TestExpiredHoldIsPurgedByTheServerClock(t *testing.T) {
	ctx, rdb, k := setupShared(t, KindSemaphore, "expiry", 3)
	p := permits(t, k, 1)
	const lease = 300 * time.Millisecond
	before, err := rdb.Time(ctx).Result()
	require.NoError(t, err)
	a, err := p.AcquireNew(ctx, rdb, "A", lease, Waiter{})
	require.NoError(t, err)
	after, err := rdb.Time(ctx).Result()
	require.NoError(t, err)
	deadline := time.UnixMilli(int64(rdb.ZScore(ctx, k.Leases, "p:A").Val()))
	require.False(t, deadline.Before(before.Add(lease).Truncate(time.Millisecond)), "server TIME + lease")
	require.False(t, deadline.After(after.Add(lease)), "server TIME + lease")
	for _, key := range []string{k.Hash, k.Leases} {
		require.Equal(t, deadline.UnixMilli(), rdb.PExpireTime(ctx, key).Val().Milliseconds(), "%s expires with the last lease", key)
	}

	_, err = p.AcquireNew(ctx, rdb, "B", testLease, Waiter{})
	require.NoError(t, err)
	c := newClient(t, rdb, k, "c")
	wc := c.waiter("c")
	r, err := permits(t, k, 2).AcquireNew(ctx, rdb, "C", testLease, wc)
	require.NoError(t, err)
	require.False(t, r.Acquired, "2 of 3 held")
	require.True(t, r.HolderTTL > 0 && r.HolderTTL <= lease, "look again when A's lease runs out: %v", r.HolderTTL)
	time.Sleep(r.HolderTTL + 20*time.Millisecond) // A was killed: it renews nothing

	r, err = permits(t, k, 2).AcquireNew(ctx, rdb, "C", testLease, wc)
	require.NoError(t, err)
	require.True(t, r.Acquired, "the look at the deadline grants it")
	require.Greater(t, r.Token, a.Token)
	require.Equal(t, map[string]int64{"p:B": 1, "p:C": 1}, holds(t, ctx, rdb, k))
	st, err := k.Inspect(ctx, rdb)
	require.NoError(t, err)
	require.EqualValues(t, 3, st.Used, "A's permit is no longer counted")
	ok, err := p.Renew(ctx, rdb, "A", a.HoldID(), testLease)
	require.NoError(t, err)
	require.False(t, ok, "an expired hold is not renewed")
}

// A queued waiter whose client died costs one skipped entry, however the
// namespace judges liveness: the grant drops it, frees what it would have
// taken, and goes on with the next, in the same script. The live client's
// waiters get one message; where liveness is judged by key, their holds
// last the key's TTL until their looks confirm them.
func TestDeadWaiterIsSkipped(t *testing.T) {
	const aliveTTL = 2 * time.Second
	for _, m := range grantModes {
		t.Run(m.name, func(t *testing.T) {
			ctx, rdb, _ := setup(t, "dead")
			ns := m.ns
			if ns.ReceiversElsewhere {
				ns.AliveTTL = aliveTTL
			}
			k := sharedKeys(t, ns, KindRW, "dead", 0)
			read, write := rw(t, k)
			w, err := write.AcquireNew(ctx, rdb, "W", testLease, Waiter{})
			require.NoError(t, err)
			dead := newClient(t, rdb, k, "dead")
			dead.enqueue(t, ctx, rdb, write, "W1", dead.waiter("w1"))
			c := newClient(t, rdb, k, "c")
			c.enqueue(t, ctx, rdb, read, "R2", c.waiter("r2"))
			c.enqueue(t, ctx, rdb, read, "R3", c.waiter("r3"))
			require.NoError(t, dead.sub.Close())
			require.NoError(t, rdb.Del(ctx, k.AliveKey("dead")).Err())

			_, err = write.Release(ctx, rdb, "W", w.HoldID(), "rel")
			require.NoError(t, err)
			gs := c.grants(t)
			require.Equal(t, []string{"r2", "r3"}, []string{gs[0].Waiter, gs[1].Waiter}, "W1 was skipped")
			require.Equal(t, map[string]int64{"r:R2": 1, "r:R3": 1}, holds(t, ctx, rdb, k))
			require.Empty(t, queued(t, ctx, rdb, k))
			if !ns.ReceiversElsewhere {
				require.Zero(t, gs[0].Unconfirmed)
				return
			}
			require.Equal(t, aliveTTL, gs[0].Unconfirmed)
			st, err := k.Inspect(ctx, rdb)
			require.NoError(t, err)
			require.LessOrEqual(t, st.Holds[0].TTL, aliveTTL, "until confirmed")
			r, err := read.AcquireNew(ctx, rdb, "R2", testLease, c.waiter("r2"))
			require.NoError(t, err)
			require.Equal(t, AcquireResult{Acquired: true, HoldCount: 1, Token: w.Token, Reported: true, hold: gs[0].HoldID()}, r)
			st, err = k.Inspect(ctx, rdb)
			require.NoError(t, err)
			require.Equal(t, "R2", st.Holds[len(st.Holds)-1].Owner)
			require.Greater(t, st.Holds[len(st.Holds)-1].TTL, aliveTTL, "confirmed by its look")
		})
	}
}

// A waiter that gives up leaves no entry and no hold, even when a grant
// raced its leave: a read granted in a batch passes its grant on, and the
// write behind the batch is granted once the last read has gone.
func TestLeaveRacingAGrantPassesTheGrantOn(t *testing.T) {
	ctx, rdb, k := setupShared(t, KindRW, "leave", 0)
	read, write := rw(t, k)
	w, err := write.AcquireNew(ctx, rdb, "W", testLease, Waiter{})
	require.NoError(t, err)
	c := newClient(t, rdb, k, "c")
	c.enqueue(t, ctx, rdb, read, "R1", c.waiter("r1"))
	c.enqueue(t, ctx, rdb, read, "R2", c.waiter("r2"))
	c.enqueue(t, ctx, rdb, write, "W3", c.waiter("w3"))
	c.enqueue(t, ctx, rdb, read, "R4", c.waiter("r4"))

	left, err := read.Leave(ctx, rdb, c.waiter("r4"), "R4", testLease, true)
	require.NoError(t, err)
	require.False(t, left, "R4 only leaves the queue")
	require.Equal(t, []string{"r1", "r2", "w3"}, queued(t, ctx, rdb, k))

	_, err = write.Release(ctx, rdb, "W", w.HoldID(), "rel")
	require.NoError(t, err)
	require.Len(t, c.grants(t), 2) // R1 and R2, whose calls are giving up
	for i, o := range []string{"R1", "R2"} {
		for range 2 { // a repeated leave is harmless
			_, err := read.Leave(ctx, rdb, c.waiter("r"+string(rune('1'+i))), o, testLease, true)
			require.NoError(t, err)
		}
		if i == 0 {
			require.Equal(t, map[string]int64{"r:R2": 1}, holds(t, ctx, rdb, k), "R1's hold is gone")
			c.requireNoMessage(t, ctx, rdb)
		}
	}
	gs := c.grants(t)
	require.Equal(t, "w3", gs[0].Waiter)
	require.Equal(t, map[string]int64{"w:W3": 1}, holds(t, ctx, rdb, k))
	require.Empty(t, queued(t, ctx, rdb, k))
}

// Every script replays under a resend: an acquire and a release by request
// ID, an owner made for one call by its hold, a waiter's look by the hold
// it was granted.
func TestSharedScriptsReplay(t *testing.T) {
	ctx, rdb, k := setupShared(t, KindRW, "replay", 0)
	read, write := rw(t, k)
	var first AcquireResult
	for i := range 2 {
		r, err := read.Acquire(ctx, rdb, "O", "same", testLease, 0, Waiter{})
		require.NoError(t, err)
		if i == 0 {
			first = r
		}
		require.Equal(t, AcquireResult{Acquired: true, HoldCount: 1, Token: first.Token, Reported: i > 0, hold: first.HoldID()}, r, "run %d", i)
	}
	_, err := read.Acquire(ctx, rdb, "O", "second", testLease, 0, Waiter{})
	require.NoError(t, err)
	for i := range 2 {
		rel, err := read.Release(ctx, rdb, "O", first.HoldID(), "rel")
		require.NoError(t, err)
		require.Equal(t, ReleaseResult{Status: StillHeld, Remaining: 1}, rel, "run %d", i)
	}
	require.Equal(t, map[string]int64{"r:O": 1}, holds(t, ctx, rdb, k))

	var n AcquireResult
	for i := range 2 {
		r, err := read.AcquireNew(ctx, rdb, "N", testLease, Waiter{})
		require.NoError(t, err)
		if i == 0 {
			n = r
			require.NotEqual(t, first.HoldID(), n.HoldID(), "a hold of its own")
		}
		require.Equal(t, AcquireResult{Acquired: true, HoldCount: 1, Token: first.Token, Reported: i > 0, hold: n.HoldID()}, r, "run %d", i)
	}

	// A given owner's waiter, granted in a batch, finds its grant on its
	// look, and counts it once.
	c := newClient(t, rdb, k, "c")
	ws := c.waiter("s")
	r, err := write.Acquire(ctx, rdb, "S", "s-look", testLease, 0, ws)
	require.NoError(t, err)
	require.False(t, r.Acquired)
	for o, id := range map[string]uint64{"O": first.HoldID(), "N": n.HoldID()} {
		_, err := read.Release(ctx, rdb, o, id, "last-"+o)
		require.NoError(t, err)
	}
	g := c.grants(t)[0]
	for range 2 {
		r, err = write.Acquire(ctx, rdb, "S", "s-look", testLease, 0, ws)
		require.NoError(t, err)
		require.Equal(t, AcquireResult{Acquired: true, HoldCount: 1, Token: g.Token, Reported: true, hold: g.HoldID()}, r)
	}
	require.Equal(t, map[string]int64{"w:S": 1}, holds(t, ctx, rdb, k))
}

// A renewal extends a live hold's lease, never shortens it, and touches no
// hold that has ended or was taken again; RenewAll renews plain locks' and
// shares' holds in one script call, and again after the server lost its
// scripts.
func TestSharedRenewal(t *testing.T) {
	ctx, rdb, k := setupShared(t, KindSemaphore, "renew", 3)
	p := permits(t, k, 1)
	a, err := p.AcquireNew(ctx, rdb, "A", time.Second, Waiter{})
	require.NoError(t, err)
	ok, err := p.Renew(ctx, rdb, "A", a.HoldID(), testLease)
	require.NoError(t, err)
	require.True(t, ok)
	ttl := func() time.Duration {
		st, err := k.Inspect(ctx, rdb)
		require.NoError(t, err)
		return st.Holds[0].TTL
	}
	require.Greater(t, ttl(), testLease-time.Second)
	ok, err = p.Renew(ctx, rdb, "A", a.HoldID(), time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	require.Greater(t, ttl(), testLease-time.Second, "never shortened")
	ok, err = p.Renew(ctx, rdb, "A", a.HoldID()+1, testLease)
	require.NoError(t, err)
	require.False(t, ok, "another token")

	lock, err := Namespace{}.Keys("renew")
	require.NoError(t, err)
	l, err := lock.AcquireNew(ctx, rdb, "L", testLease, Waiter{})
	require.NoError(t, err)
	refs := []HoldRef{{Keys: lock, Owner: "L", Token: l.Token}, p.HoldRef("A", a.HoldID()), p.HoldRef("B", a.HoldID())}
	for _, flush := range []bool{false, true} {
		if flush {
			require.NoError(t, rdb.ScriptFlush(ctx).Err())
		}
		renewed, errs := RenewAll(ctx, rdb, [][]HoldRef{refs}, testLease)
		require.Equal(t, []error{nil}, errs)
		require.Equal(t, [][]bool{{true, true, false}}, renewed)
	}
}

// More dead waiters than one script examines (grantBatch): the release's
// grant stops at its bound, and the release call goes on with pass runs
// until the live write behind them is granted; a try in between takes
// nothing past them.
func TestSharedGrantGetsPastManyDeadWaiters(t *testing.T) {
	ctx, rdb, k := setupShared(t, KindRW, "many-dead", 0)
	read, write := rw(t, k)
	w, err := write.AcquireNew(ctx, rdb, "W", testLease, Waiter{})
	require.NoError(t, err)
	const dead = 1500
	recs := make([]any, dead)
	for i := range recs {
		d := k.Waiter(fmt.Sprint("d", i), fmt.Sprint("gone-", i))
		recs[i] = d.sharedRecord(ModeRead, 1, fmt.Sprint("D", i), testLease.Milliseconds(), 0, false)
	}
	require.NoError(t, rdb.RPush(ctx, k.Queue, recs...).Err())
	c := newClient(t, rdb, k, "c")
	c.enqueue(t, ctx, rdb, write, "W2", c.waiter("w2"))

	rel, err := write.Release(ctx, rdb, "W", w.HoldID(), "rel")
	require.NoError(t, err)
	require.Equal(t, Released, rel.Status)
	require.Equal(t, "w2", c.grants(t)[0].Waiter)
	require.Empty(t, queued(t, ctx, rdb, k))

	// A try finds the resource free behind more dead entries than one run
	// gets past: it drains them over its runs, then takes.
	_, _, err = k.ForceRelease(ctx, rdb, "force-shared_lease-1")
	require.NoError(t, err)
	require.NoError(t, rdb.RPush(ctx, k.Queue, recs...).Err())
	r, err := read.AcquireNew(ctx, rdb, "T", testLease, Waiter{})
	require.NoError(t, err)
	require.True(t, r.Acquired)
	require.Empty(t, queued(t, ctx, rdb, k))
}

// The wait an acquire reports is until the first deadline of the holds as
// the call leaves them: a hold its own grant pass made, with a lease
// shorter than those before, counts. Here B's read, queued behind a write
// that left the queue, is granted by C's call, which then waits.
func TestWaitIsUntilTheFirstDeadlineAfterTheCallsGrants(t *testing.T) {
	ctx, rdb, k := setupShared(t, KindRW, "first", 0)
	read, write := rw(t, k)
	h, err := read.AcquireNew(ctx, rdb, "H", testLease, Waiter{})
	require.NoError(t, err)
	require.True(t, h.Acquired)
	c := newClient(t, rdb, k, "c")
	c.enqueue(t, ctx, rdb, write, "X", c.waiter("x"))
	const short = time.Second
	r, err := read.AcquireNew(ctx, rdb, "B", short, c.waiter("b"))
	require.NoError(t, err)
	require.False(t, r.Acquired, "B waits behind X")
	left, err := write.Leave(ctx, rdb, c.waiter("x"), "X", testLease, true)
	require.NoError(t, err)
	require.False(t, left)

	r, err = write.AcquireNew(ctx, rdb, "C", testLease, c.waiter("c"))
	require.NoError(t, err)
	require.False(t, r.Acquired, "C waits for H and B")
	require.Equal(t, "b", c.grants(t)[0].Waiter, "C's call granted B")
	require.True(t, r.HolderTTL > 0 && r.HolderTTL <= short, "look again when B's lease runs out: %v", r.HolderTTL)
}
