package rlock

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/reentrant"
)

// deadSlack bounds how long after a dead holder's lease deadline the next
// waiter is granted: its look at the deadline (a waiter looks again when
// the earliest lease runs out) and a round trip. The waiters' own lease is
// longLease, so a waiter that only looked every third of its lease would
// take seconds more.
const deadSlack = time.Second

// deadFixedLease is the fixed lease of a killed holder that takes one:
// long enough for the waiters to queue behind it before it ends.
const deadFixedLease = 4 * time.Second

// holderEnv is the environment of a holder child (startHolder) that takes
// weight of m's resource, on a fixed lease if fixed is not 0 (the
// watchdog's otherwise).
func holderEnv(m familyMember, weight int64, fixed time.Duration) []string {
	env := []string{helperKind + "=" + m.kind, helperWeight + "=" + strconv.FormatInt(weight, 10)}
	if fixed > 0 {
		env = append(env, helperFixed+"="+fixed.String())
	}
	return env
}

// awaitQueued waits until n calls wait in the queue of m's resource name.
func (m familyMember) awaitQueued(t *testing.T, srv *redistest.Server, name string, n int64) {
	t.Helper()
	waitForQueueLen(t, srv, m.hashKey(name), n)
}

// soleLease is the single lease deadline (server ms) in the leases of m's
// resource name, and its member; ok is false when none is left.
func (m familyMember) soleLease(ctx context.Context, t *testing.T, rdb *redis.Client, name string) (member string, deadline int64, ok bool) {
	t.Helper()
	zs, err := rdb.ZRangeWithScores(ctx, m.hashKey(name)+":leases", 0, -1).Result()
	require.NoError(t, err)
	require.LessOrEqual(t, len(zs), 1, "one hold at most")
	if len(zs) == 0 {
		return "", 0, false
	}
	return zs[0].Member.(string), int64(zs[0].Score), true
}

// takenAt is the result of a member's take on another goroutine, and when
// it returned.
type takenAt struct {
	h   taken
	at  time.Time
	err error
}

// takeInBackground takes weight of m's resource name for c on another
// goroutine.
func takeInBackground(ctx context.Context, m familyMember, c *Client, name string, weight int64) <-chan takenAt {
	got := make(chan takenAt, 1)
	go func() {
		h, err := m.take(ctx, c, name, weight)
		got <- takenAt{h: h, at: time.Now(), err: err}
	}()
	return got
}

// killedHolder is a scenario of testKilledHolder.
type killedHolder struct {
	m     familyMember
	held  int64         // what the holder child holds
	fixed time.Duration // its fixed lease; 0: the watchdog's, of faultLease
	dead  int64         // what the SIGKILLed waiter queued first asks
	next  []int64       // what the live waiters queued behind it ask, in turn
}

// testKilledHolder: a holder in a process of its own is renewed by the
// watchdog while it lives (a fixed lease stays as it was taken), and no
// longer once it is SIGKILLed: its lease deadline never moves again, its
// hold is freed at that deadline (not before), and the live waiters queued
// behind it (whose asks need what it held) are granted within deadSlack of
// it, without waiting out a lease or a look of their own. Ahead of them
// waits another SIGKILLed process, which the look that grants at the
// deadline skips.
func testKilledHolder(t *testing.T, s killedHolder) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	name := "dead"
	ch := startHolder(t, srv, name, faultLease, holderEnv(s.m, s.held, s.fixed)...)
	ch.locked()
	member, first, ok := s.m.soleLease(ctx, t, rdb, name)
	require.True(t, ok)
	if s.fixed == 0 {
		requireRenewed(ctx, t, s.m, rdb, name, first)
	}
	deadWaiter := startHolder(t, srv, name, longLease, holderEnv(s.m, s.dead, 0)...)
	s.m.awaitQueued(t, srv, name, 1)
	var grants []<-chan takenAt
	for _, weight := range s.next {
		grants = append(grants, takeInBackground(ctx, s.m, newClient(t, srv, WithWatchdogLease(longLease)), name, weight))
	}
	s.m.awaitQueued(t, srv, name, int64(1+len(s.next)))

	ch.kill()
	deadWaiter.kill()
	ch.awaitDisconnected(ctx, rdb) // nothing they sent can arrive after this
	_, deadline, ok := s.m.soleLease(ctx, t, rdb, name)
	require.True(t, ok, "the dead holder's hold was freed before its lease ran out")
	if s.fixed > 0 {
		require.Equal(t, first, deadline, "a fixed lease moved")
	} else {
		require.LessOrEqual(t, deadline, time.Now().Add(faultLease).UnixMilli(), "renewed after its death")
	}
	for _, h := range awaitGrants(ctx, t, s.m, rdb, name, member, deadline, grants) {
		require.NoError(t, h.give(ctx))
	}
	requireOnlyFence(t, rdb, name)
}

// requireRenewed watches the sole lease of m's resource name, whose
// deadline was first, for three leases: the hold lasts, and its deadline
// moves on.
func requireRenewed(ctx context.Context, t *testing.T, m familyMember, rdb *redis.Client, name string, first int64) {
	t.Helper()
	for until := time.Now().Add(3 * faultLease); time.Now().Before(until); time.Sleep(10 * time.Millisecond) {
		_, _, ok := m.soleLease(ctx, t, rdb, name)
		require.True(t, ok, "the live holder's hold ended")
	}
	_, renewed, _ := m.soleLease(ctx, t, rdb, name)
	require.Greater(t, renewed, first+int64(faultLease/time.Millisecond), "not renewed while alive")
}

// awaitGrants returns the holds of grants, in turn, each granted at or
// after deadline and within deadSlack of it. Until the last is, the lease
// of member (the dead holder's) in m's resource name stays at deadline or
// is gone; after, it is gone.
func awaitGrants(ctx context.Context, t *testing.T, m familyMember, rdb *redis.Client, name, member string, deadline int64, grants []<-chan takenAt) []taken {
	t.Helper()
	end := time.UnixMilli(deadline)
	leases := m.hashKey(name) + ":leases"
	var holds []taken
	for i, got := range grants {
		var r takenAt
		for waiting := true; waiting; {
			select {
			case r = <-got:
				waiting = false
			case <-time.After(5 * time.Millisecond):
				require.True(t, time.Now().Before(end.Add(fast)), "unit %d was not granted", i)
				d, err := rdb.ZScore(ctx, leases, member).Result()
				if err != redis.Nil {
					require.NoError(t, err)
					require.Equal(t, deadline, int64(d), "the dead holder's lease deadline moved")
				}
			}
		}
		require.NoError(t, r.err)
		late := r.at.Sub(end)
		t.Logf("unit %d granted %v after the dead holder's lease deadline", i, late)
		require.GreaterOrEqual(t, late, time.Duration(0), "granted before the dead holder's lease ran out")
		require.Less(t, late, deadSlack)
		holds = append(holds, r.h)
	}
	require.ErrorIs(t, rdb.ZScore(ctx, leases, member).Err(), redis.Nil, "the dead holder's lease is gone")
	return holds
}

// Issue 24 property 6, holders: a read holder's death frees the write
// queued behind a dead write; a write holder's, the two reads (of two
// clients) behind a dead read that would be in their batch.
func TestRWKilledHolderRenewedUntilDeathThenFreed(t *testing.T) {
	w := reentrant.WriteWeight
	t.Run("r", func(t *testing.T) { testKilledHolder(t, killedHolder{m: rwMember, held: 1, dead: w, next: []int64{w}}) })
	t.Run("w", func(t *testing.T) {
		testKilledHolder(t, killedHolder{m: rwMember, held: w, dead: 1, next: []int64{1, 1}})
	})
}

// Issue 25 property 2: a SIGKILLed holder of 3 of 4 permits, on a watchdog
// lease or a fixed one, returns them at its lease deadline straight to the
// live waiters behind a dead one: an ask for 2, which needs them, and an
// ask for 1 behind it, which fits beside the dead holder's 3 but must not
// overtake the head.
func TestSemaphoreKilledHolderReturnsPermits(t *testing.T) {
	for _, fixed := range []time.Duration{0, deadFixedLease} {
		t.Run("fixed="+fixed.String(), func(t *testing.T) {
			testKilledHolder(t, killedHolder{m: semMember, held: 3, fixed: fixed, dead: 2, next: []int64{2, 1}})
		})
	}
}

// testKilledWaiter: m's whole resource is held here; a waiter in a process
// of its own, asking dead, queues and is SIGKILLed, and a live waiter
// asking next queues behind it. The release costs the live waiter one
// skipped entry: it is granted at once (within fast; it looks every 10 s),
// the queue is empty, and its hold is all that is held.
func testKilledWaiter(t *testing.T, m familyMember, dead, next int64) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	name := "deadwait"
	held, err := m.take(ctx, newClient(t, srv, WithWatchdogLease(longLease)), name, m.size)
	require.NoError(t, err)
	ch := startHolder(t, srv, name, longLease, holderEnv(m, dead, 0)...)
	m.awaitQueued(t, srv, name, 1)
	behind := takeInBackground(ctx, m, newClient(t, srv, WithWatchdogLease(longLease)), name, next)
	m.awaitQueued(t, srv, name, 2)
	ch.kill()
	ch.awaitDisconnected(ctx, rdb)

	require.NoError(t, held.give(ctx))
	got := within(t, behind, "the waiter behind the dead one was not granted")
	require.NoError(t, got.err)
	require.Zero(t, rdb.LLen(ctx, m.hashKey(name)+":queue").Val(), "the dead waiter's entry is left")
	holders := rdb.ZRange(ctx, m.hashKey(name)+":leases", 0, -1).Val()
	require.Len(t, holders, 1, "one hold")
	require.True(t, strings.HasSuffix(holders[0], ":"+got.h.owner), "the waiter behind holds: %v", holders)
	require.Equal(t, strconv.FormatInt(next, 10), rdb.HGet(ctx, m.hashKey(name), "used").Val(), "held")
	require.NoError(t, got.h.give(ctx))
	requireOnlyFence(t, rdb, name)
}

// Issue 24 property 6, waiters: a reader or a writer SIGKILLed while it
// waits at the head of the queue, with a writer or a reader behind it.
func TestRWKilledQueuedWaiterIsSkipped(t *testing.T) {
	w := reentrant.WriteWeight
	t.Run("r", func(t *testing.T) { testKilledWaiter(t, rwMember, 1, w) })
	t.Run("w", func(t *testing.T) { testKilledWaiter(t, rwMember, w, 1) })
}

// Issue 25 property 10 across processes: a waiter SIGKILLed at the head of
// the queue, asking for every permit (which would block the ask for 1
// behind it) or for 1 (whose grant would keep the ask for all behind it
// waiting out the dead one's lease).
func TestSemaphoreKilledQueuedWaiterIsSkipped(t *testing.T) {
	t.Run("all-then-1", func(t *testing.T) { testKilledWaiter(t, semMember, semSize, 1) })
	t.Run("1-then-all", func(t *testing.T) { testKilledWaiter(t, semMember, 1, semSize) })
}
