package rlock

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// isSetScript matches a script call with keys keys and args arguments: a
// set's scripts have no fixed shape, their members' count sets it.
func isSetScript(keys, args int) func(cmd []string) bool {
	return func(cmd []string) bool {
		if (cmd[0] != "evalsha" && cmd[0] != "eval") || len(cmd) < 3 {
			return false
		}
		n, err := strconv.Atoi(cmd[2])
		return err == nil && n == keys && len(cmd) == 3+keys+args
	}
}

// The shapes of a set's scripts for n members (acquire_set.lua,
// release_set.lua).
func acquireSetShape(n int, newOwner bool) func(cmd []string) bool {
	keys := 3 * n
	if !newOwner {
		keys++
	}
	return isSetScript(keys, 4)
}

// queuingSetShape is acquireSetShape's with a waiter, for an owner made
// for the call.
func queuingSetShape(n int) func(cmd []string) bool { return isSetScript(3*n, 6) }

func releaseSetShape(n int) func(cmd []string) bool { return isSetScript(4*n+1, 2*n+2) }

// Property 7: a set's scripts resent by go-redis after their first run
// replay it: no member is counted twice, and no member is handed on twice.
func TestLockSetResentByGoRedis(t *testing.T) {
	names := []string{"re-a", "re-b", "re-c"}
	for _, given := range []bool{false, true} {
		t.Run(fmt.Sprintf("acquire-given-owner-%v", given), func(t *testing.T) {
			ctx, srv := serve(t)
			c, px := resendClient(ctx, t, srv)
			warmSetScripts(ctx, t, c)
			px.DropNextReply(acquireSetShape(len(names), !given), false)
			s, err := c.LockAll(givenOwner(ctx, given), names)
			require.NoError(t, err)
			require.EqualValues(t, 1, px.Dropped(), "the set's reply was lost and resent")
			requireHeldOnceBy(ctx, t, c, s.members[0].hold.owner, names...)
			require.NoError(t, s.Unlock(ctx))
			requireNothingLeft(ctx, t, c, admin(t, srv), names...)
		})
	}
	t.Run("release", func(t *testing.T) {
		ctx, srv := serve(t)
		c, px := resendClient(ctx, t, srv)
		warmSetScripts(ctx, t, c)
		unlockToWaiter(ctx, t, srv, c, names, ctx, func() { px.DropNextReply(releaseSetShape(len(names)), false) })
		require.EqualValues(t, 1, px.Dropped(), "the release's reply was lost and resent")
	})
}

// unlockToWaiter takes names as a set through c, has another client wait
// for names[1], unlocks the set with unlockCtx (after arm), and checks that
// the waiter is granted that member once, and that nothing is left.
func unlockToWaiter(ctx context.Context, t *testing.T, srv *redistest.Server, c *Client, names []string,
	unlockCtx context.Context, arm func()) {
	t.Helper()
	s, err := c.LockAll(ctx, names)
	require.NoError(t, err)
	waiter := lockInBackground(ctx, newClient(t, srv), names[1])
	waitForQueued(t, srv, names[1], 1)
	arm()
	require.NoError(t, s.Unlock(unlockCtx))
	l := receive(t, waiter)
	requireHeldOnceBy(ctx, t, c, l.Owner(), names[1])
	require.NoError(t, l.Unlock(ctx))
	requireNothingLeft(ctx, t, c, admin(t, srv), names...)
}

// Property 7: a set script whose reply is lost, with no resend, fails the
// call, and the set's give-back (a replay, then a release) leaves nothing
// taken.
func TestLockSetLostReplyLeavesNothing(t *testing.T) {
	for _, given := range []bool{false, true} {
		t.Run(fmt.Sprintf("given-owner-%v", given), func(t *testing.T) {
			ctx, srv := serve(t)
			c, px := proxiedClient(ctx, t, srv, 300*time.Millisecond, -1)
			warmSetScripts(ctx, t, c)
			names := []string{"lr-a", "lr-b", "lr-c"}
			px.DropNextReply(acquireSetShape(len(names), !given), true)
			_, err := c.LockAll(givenOwner(ctx, given), names)
			require.Error(t, err)
			require.EqualValues(t, 1, px.Dropped())
			require.Eventually(t, func() bool { return allFree(ctx, t, c, names) }, fast, 10*time.Millisecond,
				"the lost set's members were not given back")
			requireNothingLeft(ctx, t, c, admin(t, srv), names...)
		})
	}
}

// Property 7: a set script that queued its waiter, whose reply is lost
// with no resend, fails the call, and the undo leaves the queue too.
func TestLockSetLostQueuingReplyLeavesNothing(t *testing.T) {
	ctx, srv := serve(t)
	c, px := proxiedClient(ctx, t, srv, 300*time.Millisecond, -1)
	warmGrantLine(ctx, t, c)
	warmSetScripts(ctx, t, c)
	names := inOrder(t, c, "lq-a", "lq-b", "lq-c")
	holder, err := newClient(t, srv).Lock(ctx, names[1])
	require.NoError(t, err)
	px.DropNextReply(queuingSetShape(len(names)), true)
	_, err = c.LockAll(ctx, names)
	require.Error(t, err)
	require.EqualValues(t, 1, px.Dropped())
	rdb := admin(t, srv)
	require.Eventually(t, func() bool {
		return allFree(ctx, t, c, names[:1]) && rdb.Exists(ctx, lockKey(names[1])+":queue").Val() == 0
	}, fast, 10*time.Millisecond, "the lost set's member or waiter was left")
	require.NoError(t, holder.Unlock(ctx))
	requireNothingLeft(ctx, t, c, rdb, names...)
}

// replay is a channel that gives o again.
func replay(o setOutcome) <-chan setOutcome {
	out := make(chan setOutcome, 1)
	out <- o
	return out
}

// allFree reports whether nobody holds any of names.
func allFree(ctx context.Context, t *testing.T, c *Client, names []string) bool {
	for _, name := range names {
		if holderOf(ctx, t, c, name) != "" {
			return false
		}
	}
	return true
}

// Property 7: every connection killed (CLIENT KILL) while a set waits
// for its second member, holding the first: the set still ends whole,
// granted every member once, or, cancelled, holds and waits nowhere.
func TestLockSetConnectionKilledMidSet(t *testing.T) {
	for _, tc := range []struct{ warm, cancelled bool }{{false, false}, {false, true}, {true, false}, {true, true}} {
		cancelled := tc.cancelled
		t.Run(fmt.Sprintf("line-kept-%v/cancelled-%v", tc.warm, cancelled), func(t *testing.T) {
			ctx, srv := serve(t)
			c, other := newClient(t, srv), newClient(t, srv)
			if tc.warm {
				warmGrantLine(ctx, t, c)
			}
			names := inOrder(t, c, "k-a", "k-b", "k-c")
			holder, err := other.Lock(ctx, names[1])
			require.NoError(t, err)
			callCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			got := lockAllInBackground(callCtx, c, names)
			waitForQueued(t, srv, names[1], 1)
			rdb := admin(t, srv)
			require.NoError(t, rdb.Do(ctx, "client", "kill", "type", "pubsub").Err())
			require.NoError(t, rdb.Do(ctx, "client", "kill", "type", "normal", "skipme", "yes").Err())
			if cancelled {
				cancel()
			}
			require.NoError(t, holder.Unlock(ctx))
			if cancelled {
				// Cancelled or granted first: either way, whole or nothing.
				o := receiveSet(t, got)
				if o.err != nil {
					require.ErrorIs(t, o.err, context.Canceled)
					requireNothingLeft(ctx, t, c, rdb, names...)
					return
				}
				got = replay(o)
			}
			require.NoError(t, receiveWholeSet(ctx, t, c, got, names...).Unlock(ctx))
			requireNothingLeft(ctx, t, c, rdb, names...)
		})
	}
}
