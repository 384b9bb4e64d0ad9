package rlock

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/notify/slot"
)

// scriptCalls is how many script calls the servers ran since before.
func scriptCalls(t *testing.T, after, before []redistest.CommandStats) int64 {
	t.Helper()
	var n int64
	for i := range after {
		n += after[i]["evalsha"] + after[i]["eval"] - before[i]["evalsha"] - before[i]["eval"]
	}
	return n
}

// serverStats reads rdb's command statistics, as one node's.
func serverStats(t *testing.T, rdb *redis.Client) []redistest.CommandStats {
	t.Helper()
	st, err := redistest.ReadCommandStats(testCtx(t), rdb)
	require.NoError(t, err)
	return []redistest.CommandStats{st}
}

// warmSetScripts has the server cache the set's scripts, so that a count
// of script calls does not count a NOSCRIPT.
func warmSetScripts(ctx context.Context, t *testing.T, c *Client) {
	t.Helper()
	warm, err := c.LockAll(ctx, []string{"warm"})
	require.NoError(t, err)
	require.NoError(t, warm.Unlock(ctx))
}

// Property 4: a free set is one script call on a single node, however
// many members and slots it has, up to MaxLockSet, and so is its Unlock;
// whole sets in one slot too.
func TestLockSetOneCallWhenFree(t *testing.T) {
	ctx, srv := serve(t)
	c := newClient(t, srv)
	rdb := admin(t, srv)
	warmSetScripts(ctx, t, c)
	many := make([]string, 100)
	for i := range many {
		many[i] = fmt.Sprintf("many-%d", i)
	}
	limit := make([]string, MaxLockSet)
	for i := range limit {
		limit[i] = fmt.Sprintf("limit-%d", i)
	}
	for name, names := range map[string][]string{"slots": many, "one-slot": sameSlotNames("tag", 100), "limit": limit} {
		t.Run(name, func(t *testing.T) {
			before := serverStats(t, rdb)
			s, err := c.LockAll(ctx, names)
			require.NoError(t, err)
			require.EqualValues(t, 1, scriptCalls(t, serverStats(t, rdb), before))
			before = serverStats(t, rdb)
			require.NoError(t, s.Unlock(ctx))
			require.EqualValues(t, 1, scriptCalls(t, serverStats(t, rdb), before))
			requireNothingLeft(ctx, t, c, rdb, names...)
		})
	}
}

// Property 4: one Unlock hands each member to its own next waiter, one
// grant message each, in one script call.
func TestLockSetUnlockHandsEachKeyOn(t *testing.T) {
	ctx, srv := serve(t)
	c := newClient(t, srv)
	rdb := admin(t, srv)
	warmSetScripts(ctx, t, c)
	names := []string{"h-a", "h-b", "h-c"}
	s, err := c.LockAll(ctx, names)
	require.NoError(t, err)
	waiting := make([]<-chan acquired, len(names))
	for i, name := range names {
		waiting[i] = lockInBackground(ctx, newClient(t, srv), name)
		waitForQueued(t, srv, name, 1)
	}
	before := serverStats(t, rdb)
	require.NoError(t, s.Unlock(ctx))
	after := serverStats(t, rdb)
	require.EqualValues(t, 1, scriptCalls(t, after, before))
	require.EqualValues(t, 3, after[0]["publish"]-before[0]["publish"], "one grant per member")
	for i, name := range names {
		l := receive(t, waiting[i])
		require.Equal(t, name, l.Name())
		require.Equal(t, l.Owner(), holderOf(ctx, t, c, name))
		require.NoError(t, l.Unlock(ctx))
	}
	requireNothingLeft(ctx, t, c, rdb, names...)
}

// Property 5: losing any member ends the set's Context, with ErrLockLost
// naming the member, whoever finds the loss: another client's
// ForceUnlock (found by the watchdog's renewal), or this client's own.
func TestLockSetLostMember(t *testing.T) {
	for _, own := range []bool{false, true} {
		t.Run(fmt.Sprintf("own-%v", own), func(t *testing.T) {
			ctx, srv := serve(t)
			c := newClient(t, srv, WithWatchdogLease(steadyLease))
			forcer := c
			if !own {
				forcer = newClient(t, srv)
			}
			names := []string{"lost-a", "lost-b", "lost-c"}
			s, err := c.LockAll(ctx, names)
			require.NoError(t, err)
			n, err := forcer.ForceUnlock(ctx, "lost-b")
			require.NoError(t, err)
			require.EqualValues(t, 1, n)
			select {
			case <-s.Context().Done():
			case <-time.After(steadyLease):
				t.Fatal("the set's Context outlived its lost member")
			}
			cause := context.Cause(s.Context())
			require.ErrorIs(t, cause, ErrLockLost)
			require.ErrorContains(t, cause, `"lost-b"`)
			err = s.Unlock(ctx)
			require.ErrorIs(t, err, ErrLockLost)
			requireNothingLeft(ctx, t, c, admin(t, srv), names...)
		})
	}
}

// Property 5: the watchdog renews a set's members with one script call per
// slot per round, all in one pipeline.
func TestLockSetRenewalPerSlot(t *testing.T) {
	ctx, srv := serve(t)
	rdb := srv.Client()
	pipes := redistest.CountPipelines(rdb)
	c, err := New(rdb, WithWatchdogLease(steadyLease))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	names := append(sameSlotNames("renew", 3), "renew-x", "renew-y")
	slots := map[int]bool{}
	for _, name := range names {
		slots[slot.Of(lockKey(name))] = true
	}
	s, err := c.LockAll(ctx, names)
	require.NoError(t, err)
	pipes.Take()
	time.Sleep(steadyLease)
	rounds := pipes.Take()[srv.Addr]
	require.GreaterOrEqual(t, len(rounds), 2, "the watchdog renewed the set")
	for _, size := range rounds {
		require.Equal(t, len(slots), size, "one script call per slot in each round")
	}
	require.NoError(t, s.Context().Err())
	require.NoError(t, s.Unlock(ctx))
}

// Property 5: a fixed lease applies to every member, none renewed: the
// set's Context has its deadline, and ends with ErrLockLost naming a
// member once it passes.
func TestLockSetFixedLease(t *testing.T) {
	ctx, srv := serve(t)
	c := newClient(t, srv)
	const lease = 300 * time.Millisecond
	names := []string{"fixed-a", "fixed-b"}
	start := time.Now()
	s, err := c.LockAll(ctx, names, WithLease(lease))
	require.NoError(t, err)
	for _, name := range names {
		pttl := admin(t, srv).PTTL(ctx, lockKey(name)).Val()
		require.True(t, pttl > 0 && pttl <= lease, "%q: PTTL %v", name, pttl)
	}
	deadline, ok := s.Context().Deadline()
	require.True(t, ok)
	require.WithinDuration(t, start.Add(lease), deadline, lease/2)
	select {
	case <-s.Context().Done():
	case <-time.After(fast):
		t.Fatal("the set's Context outlived its fixed lease")
	}
	require.ErrorIs(t, context.Cause(s.Context()), ErrLockLost)
	require.ErrorContains(t, context.Cause(s.Context()), `"fixed-`)
	require.Zero(t, c.RenewalStats().Renewed)
	require.ErrorIs(t, s.Unlock(ctx), ErrLockLost, "a set whose fixed lease ran out")
}

// scriptCounter counts the script calls a Redis client sends.
type scriptCounter struct{ n atomic.Int64 }

func (*scriptCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (*scriptCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (s *scriptCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name == "evalsha" || name == "eval" {
			s.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

// Property 4, contended: a client that keeps its grant line is queued at
// the held member by the set's own script, and takes all the rest with
// one more once granted: two script calls for the set, where the wait
// costs none.
func TestLockSetContendedRoundTrips(t *testing.T) {
	ctx, srv := serve(t)
	rdb := srv.Client()
	var calls scriptCounter
	rdb.AddHook(&calls)
	c, err := New(rdb)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	warmGrantLine(ctx, t, c)
	warmSetScripts(ctx, t, c)
	names := inOrder(t, c, "rt-a", "rt-b", "rt-c", "rt-d")
	holder, err := newClient(t, srv).Lock(ctx, names[1])
	require.NoError(t, err)
	calls.n.Store(0)
	got := lockAllInBackground(ctx, c, names)
	waitForQueued(t, srv, names[1], 1)
	require.EqualValues(t, 1, calls.n.Load(), "the set's script queued it")
	require.NoError(t, holder.Unlock(ctx))
	o := receiveSet(t, got)
	require.NoError(t, o.err)
	require.EqualValues(t, 2, calls.n.Load(), "one more script for the rest")
	require.NoError(t, o.s.Unlock(ctx))
	requireNothingLeft(ctx, t, c, admin(t, srv), names...)
}
