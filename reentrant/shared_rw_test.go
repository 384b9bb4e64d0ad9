package reentrant

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A write is alone: no read while it holds, no write while reads hold.
func TestRWWriteExcludesEveryone(t *testing.T) {
	ctx, rdb, k := setupShared(t, KindRW, "excl", 0)
	read, write := rw(t, k)

	w, err := write.AcquireNew(ctx, rdb, "W", testLease, Waiter{})
	require.NoError(t, err)
	require.True(t, w.Acquired)
	for _, s := range []SharedMode{read, write} {
		r, err := s.AcquireNew(ctx, rdb, "X", testLease, Waiter{})
		require.NoError(t, err)
		require.False(t, r.Acquired, "%s while a write holds", s.Mode())
		require.Positive(t, r.HolderTTL)
	}
	rel, err := write.Release(ctx, rdb, "W", w.HoldID(), "rel-w")
	require.NoError(t, err)
	require.Equal(t, Released, rel.Status)

	r1, err := read.AcquireNew(ctx, rdb, "R1", testLease, Waiter{})
	require.NoError(t, err)
	require.True(t, r1.Acquired)
	r2, err := read.AcquireNew(ctx, rdb, "R2", testLease, Waiter{})
	require.NoError(t, err)
	require.True(t, r2.Acquired, "reads share")
	x, err := write.AcquireNew(ctx, rdb, "X", testLease, Waiter{})
	require.NoError(t, err)
	require.False(t, x.Acquired, "a write while reads hold")
	require.Equal(t, map[string]int64{"r:R1": 1, "r:R2": 1}, holds(t, ctx, rdb, k))

	for _, o := range []struct {
		owner string
		token uint64
	}{{"R1", r1.HoldID()}, {"R2", r2.HoldID()}} {
		rel, err := read.Release(ctx, rdb, o.owner, o.token, "rel-"+o.owner)
		require.NoError(t, err)
		require.Equal(t, Released, rel.Status)
	}
	x, err = write.AcquireNew(ctx, rdb, "X", testLease, Waiter{})
	require.NoError(t, err)
	require.True(t, x.Acquired)
	_, err = write.Release(ctx, rdb, "X", x.HoldID(), "rel-x")
	require.NoError(t, err)
	requireOnlyExpiringKeys(t, ctx, rdb, k)
}

// Writers are not starved, and nobody barges: a read arriving after a
// queued write goes after it, though it would fit; a try (no waiter) takes
// nothing while anyone is queued; the write is granted when the last read
// leaves, and the read after it when the write does.
func TestRWQueueIsFIFO(t *testing.T) {
	ctx, rdb, k := setupShared(t, KindRW, "fifo", 0)
	read, write := rw(t, k)
	r1, err := read.AcquireNew(ctx, rdb, "R1", testLease, Waiter{})
	require.NoError(t, err)
	c := newClient(t, rdb, k, "c")
	c.enqueue(t, ctx, rdb, write, "W2", c.waiter("w2"))
	c.enqueue(t, ctx, rdb, read, "R3", c.waiter("r3"))
	try, err := read.AcquireNew(ctx, rdb, "R4", testLease, Waiter{})
	require.NoError(t, err)
	require.False(t, try.Acquired, "a read does not pass a queued write")
	require.Equal(t, []string{"w2", "r3"}, queued(t, ctx, rdb, k))

	_, err = read.Release(ctx, rdb, "R1", r1.HoldID(), "rel-r1")
	require.NoError(t, err)
	gs := c.grants(t)
	require.Equal(t, []Grant{{Waiter: "w2", Lock: "fifo", Kind: KindRW, Mode: ModeWrite, Weight: WriteWeight, Token: gs[0].Token,
		Owner: "W2", hold: gs[0].HoldID()}}, gs)
	require.Greater(t, gs[0].Token, r1.Token)
	require.Equal(t, map[string]int64{"w:W2": 1}, holds(t, ctx, rdb, k))
	require.Equal(t, []string{"r3"}, queued(t, ctx, rdb, k))

	_, err = write.Release(ctx, rdb, "W2", gs[0].HoldID(), "rel-w2")
	require.NoError(t, err)
	gs3 := c.grants(t)
	require.Equal(t, "r3", gs3[0].Waiter)
	require.Equal(t, gs[0].Token, gs3[0].Token, "a read has the token of the last write")
	require.Equal(t, map[string]int64{"r:R3": 1}, holds(t, ctx, rdb, k))
}

// Re-entry: a read in a read and a write in a write are counted, granted
// at once past a queued waiter, keep their token, and leave the hold only
// with the last release.
func TestRWReentry(t *testing.T) {
	ctx, rdb, k := setupShared(t, KindRW, "reentry", 0)
	read, write := rw(t, k)
	c := newClient(t, rdb, k, "c")
	for _, s := range []SharedMode{read, write} {
		first, err := s.Acquire(ctx, rdb, "O", "a1-"+string(s.Mode()), testLease, 0, Waiter{})
		require.NoError(t, err)
		require.True(t, first.Acquired)
		c.enqueue(t, ctx, rdb, write, "Q-"+string(s.Mode()), c.waiter("q-"+string(s.Mode())))
		again, err := s.Acquire(ctx, rdb, "O", "a2-"+string(s.Mode()), testLease, first.HoldID(), Waiter{})
		require.NoError(t, err)
		require.Equal(t, AcquireResult{Acquired: true, HoldCount: 2, Token: first.Token, hold: first.HoldID()}, again, "re-entered past the queue")
		rel, err := s.Release(ctx, rdb, "O", first.HoldID(), "r1-"+string(s.Mode()))
		require.NoError(t, err)
		require.Equal(t, ReleaseResult{Status: StillHeld, Remaining: 1}, rel)
		c.requireNoMessage(t, ctx, rdb)
		rel, err = s.Release(ctx, rdb, "O", first.HoldID(), "r2-"+string(s.Mode()))
		require.NoError(t, err)
		require.Equal(t, Released, rel.Status)
		g := c.grants(t)
		require.Equal(t, "q-"+string(s.Mode()), g[0].Waiter)
		_, err = write.Release(ctx, rdb, g[0].Owner, g[0].HoldID(), "rq-"+string(s.Mode()))
		require.NoError(t, err)
	}
	requireOnlyExpiringKeys(t, ctx, rdb, k)
}

// A read inside the owner's own write is granted at once, with the write's
// token, past a queued write; after the write's release the read remains,
// and the queued write comes only after it (a downgrade).
func TestRWReadInsideWriteDowngrades(t *testing.T) {
	ctx, rdb, k := setupShared(t, KindRW, "downgrade", 0)
	read, write := rw(t, k)
	w, err := write.Acquire(ctx, rdb, "O", "w", testLease, 0, Waiter{})
	require.NoError(t, err)
	c := newClient(t, rdb, k, "c")
	c.enqueue(t, ctx, rdb, write, "W2", c.waiter("w2"))
	c.enqueue(t, ctx, rdb, read, "R3", c.waiter("r3"))

	r, err := read.Acquire(ctx, rdb, "O", "r", testLease, 0, Waiter{})
	require.NoError(t, err)
	require.Equal(t, AcquireResult{Acquired: true, HoldCount: 1, Token: w.Token, hold: r.HoldID()}, r)
	require.NotEqual(t, w.HoldID(), r.HoldID(), "the read is a hold of its own")
	require.Equal(t, map[string]int64{"w:O": 1, "r:O": 1}, holds(t, ctx, rdb, k))

	rel, err := write.Release(ctx, rdb, "O", w.HoldID(), "rel-w")
	require.NoError(t, err)
	require.Equal(t, Released, rel.Status)
	require.Equal(t, map[string]int64{"r:O": 1}, holds(t, ctx, rdb, k), "the read remains; no write came between")
	require.Equal(t, []string{"w2", "r3"}, queued(t, ctx, rdb, k), "and R3 stays behind W2")
	c.requireNoMessage(t, ctx, rdb)

	rel, err = read.Release(ctx, rdb, "O", r.HoldID(), "rel-r")
	require.NoError(t, err)
	require.Equal(t, Released, rel.Status)
	g := c.grants(t)
	require.Equal(t, "w2", g[0].Waiter)
	require.Greater(t, g[0].Token, w.Token)
}

// Tokens: a write's is above every earlier grant's; a read's is the last
// write's, shared by a batch of reads, or, before any, the next one, as a
// write would take.
func TestRWTokens(t *testing.T) {
	ctx, rdb, k := setupShared(t, KindRW, "tokens", 0)
	read, write := rw(t, k)
	r0, err := read.AcquireNew(ctx, rdb, "R0", testLease, Waiter{})
	require.NoError(t, err)
	require.InDelta(t, time.Now().UnixMicro(), r0.Token, float64(time.Minute.Microseconds()),
		"no write yet: the clock's token")
	_, err = read.Release(ctx, rdb, "R0", r0.HoldID(), "rel-r0")
	require.NoError(t, err)

	last := r0.Token
	for i := range 3 {
		w, err := write.AcquireNew(ctx, rdb, "W", testLease, Waiter{})
		require.NoError(t, err)
		require.Greater(t, w.Token, last, "write %d", i)
		last = w.Token
		c := newClient(t, rdb, k, "c"+ids("", 3)[i])
		for _, id := range ids("r", 3) {
			c.enqueue(t, ctx, rdb, read, "R-"+id, c.waiter(id))
		}
		_, err = write.Release(ctx, rdb, "W", w.HoldID(), "rel-w"+ids("", 3)[i])
		require.NoError(t, err)
		for _, g := range c.grants(t) {
			require.Equal(t, w.Token, g.Token, "a read has the last write's token")
			_, err = read.Release(ctx, rdb, g.Owner, g.HoldID(), "rel-"+g.Owner+ids("", 3)[i])
			require.NoError(t, err)
		}
		st, err := k.Inspect(ctx, rdb)
		require.NoError(t, err)
		require.Equal(t, w.Token, st.LastToken)
	}
}

// Three waiters of one owner (a given owner, as WithOwner makes) are
// granted one read hold in one batch, count 3, each its own count: a look
// claims one (its leave then gives nothing back), each other's leave gives
// back its own count once, and the claimed count is left to its release.
// Before, the hold named only the last waiter granted: the first's leave
// gave back nothing, and a client's hand-back of its grant by owner and
// token could give back another waiter's count.
func TestRWSharedOwnerWaitersLeaveOnlyTheirOwnCount(t *testing.T) {
	ctx, rdb, k := setupShared(t, KindRW, "sharedowner", 0)
	read, write := rw(t, k)
	w, err := write.AcquireNew(ctx, rdb, "W", testLease, Waiter{})
	require.NoError(t, err)
	c := newClient(t, rdb, k, "c")
	for _, id := range []string{"a", "b", "c"} {
		r, err := read.Acquire(ctx, rdb, "O", "q-"+id, testLease, 0, c.waiter(id))
		require.NoError(t, err)
		require.False(t, r.Acquired)
	}
	_, err = write.Release(ctx, rdb, "W", w.HoldID(), "rw")
	require.NoError(t, err)
	require.Len(t, c.grants(t), 3)
	require.Equal(t, map[string]int64{"r:O": 3}, holds(t, ctx, rdb, k))

	look, err := read.Acquire(ctx, rdb, "O", "look-b", testLease, 0, c.waiter("b"))
	require.NoError(t, err)
	require.Equal(t, AcquireResult{Acquired: true, HoldCount: 3, Token: look.Token, Reported: true, hold: look.HoldID()}, look)
	for _, step := range []struct {
		id   string
		left bool
		want int64
	}{{"b", false, 3}, {"a", true, 2}, {"a", false, 2}, {"c", true, 1}} {
		left, err := read.Leave(ctx, rdb, c.waiter(step.id), "O", testLease, false)
		require.NoError(t, err)
		require.Equal(t, step.left, left, "leave %s", step.id)
		require.Equal(t, map[string]int64{"r:O": step.want}, holds(t, ctx, rdb, k), "after leave %s", step.id)
	}
	rel, err := read.Release(ctx, rdb, "O", look.HoldID(), "rb")
	require.NoError(t, err)
	require.Equal(t, Released, rel.Status)
	requireOnlyExpiringKeys(t, ctx, rdb, k)
}

// A queued call of an owner that holds a read, reached by a later grant,
// joins that hold wherever it lies in the queue: counted, taking no more
// of the size. Here it is the seventh entry, past what a grant that
// stops at the head reads and parses.
func TestRWQueuedCallJoinsItsOwnersHold(t *testing.T) {
	ctx, rdb, k := setupShared(t, KindRW, "join", 0)
	read, write := rw(t, k)
	x, err := write.AcquireNew(ctx, rdb, "X", testLease, Waiter{})
	require.NoError(t, err)
	c := newClient(t, rdb, k, "c")
	enqueue := func(s SharedMode, owner, id string) {
		r, err := s.Acquire(ctx, rdb, owner, "req-"+id, testLease, 0, c.waiter(id))
		require.NoError(t, err)
		require.False(t, r.Acquired, "%s waits", id)
	}
	enqueue(read, "O", "o1")
	enqueue(write, "B", "b")
	readers := ids("a", 6)
	for _, id := range readers {
		enqueue(read, "A-"+id, id)
	}
	enqueue(read, "O", "o2")
	_, err = write.Release(ctx, rdb, "X", x.HoldID(), "rel-x")
	require.NoError(t, err)
	require.Equal(t, "o1", c.grants(t)[0].Waiter)
	require.Equal(t, map[string]int64{"r:O": 1}, holds(t, ctx, rdb, k))

	left, err := write.Leave(ctx, rdb, c.waiter("b"), "B", testLease, false)
	require.NoError(t, err)
	require.False(t, left, "B only leaves the queue")
	var got []string
	for _, g := range c.grants(t) {
		got = append(got, g.Waiter)
	}
	require.ElementsMatch(t, append(readers, "o2"), got, "B, the queue's head, grants the reads queued behind it as it leaves")
	r, err := read.Acquire(ctx, rdb, "A-a0", "req-a0", testLease, 0, c.waiter("a0"))
	require.NoError(t, err)
	require.True(t, r.Acquired, "a0's look finds its grant")
	want := map[string]int64{"r:O": 2}
	for _, id := range readers {
		want["r:A-"+id] = 1
	}
	require.Equal(t, want, holds(t, ctx, rdb, k))
	st, err := k.Inspect(ctx, rdb)
	require.NoError(t, err)
	require.EqualValues(t, 1+len(readers), st.Used, "O's second count takes no more")
	require.Empty(t, queued(t, ctx, rdb, k))
}

// A read inside its owner's own write is granted at once, past the queue:
// also when the write is granted in the same script, by the grant the
// read's own call runs (here the read that held has expired, and the
// read's call finds the owner's write at the queue's head).
func TestReadInsideAWriteGrantedInTheSameScript(t *testing.T) {
	ctx, rdb, k := setupShared(t, KindRW, "inside", 0)
	read, write := rw(t, k)
	_, err := read.AcquireNew(ctx, rdb, "R", 100*time.Millisecond, Waiter{})
	require.NoError(t, err)
	c := newClient(t, rdb, k, "c")
	_, err = write.Acquire(ctx, rdb, "O", "w", testLease, 0, c.waiter("w"))
	require.NoError(t, err)
	c.enqueue(t, ctx, rdb, write, "P", c.waiter("p"))
	time.Sleep(150 * time.Millisecond) // R's lease runs out

	got, err := read.Acquire(ctx, rdb, "O", "now", testLease, 0, Waiter{})
	require.NoError(t, err)
	require.True(t, got.Acquired, "a read inside the write granted in its own call")
	gs := c.grants(t)
	require.Len(t, gs, 1)
	require.Equal(t, "w", gs[0].Waiter)
	require.Equal(t, gs[0].Token, got.Token, "the write's token")
	require.Equal(t, map[string]int64{"w:O": 1, "r:O": 1}, holds(t, ctx, rdb, k))
	require.Equal(t, []string{"p"}, queued(t, ctx, rdb, k))
}
