package rlock

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// holdsLive reports whether c has a hold of name that it does not know
// to have ended.
func holdsLive(c *Client, name string) bool {
	return len(c.table.holdsOf(func(h *hold) bool { return h.res.name() == name && h.endCause() == nil })) > 0
}

// Property 1 against a member lost while the set waits for a later one
// (here force-unlocked and taken by another client; a restart without
// data, or a holder paused past its lease, alike): once the client knows
// that member lost, LockAll must not return the set as held. Before the
// fix it returned the set, its Context already ended, while another
// client held that member.
func TestLockAllMemberLostWhileWaiting(t *testing.T) {
	ctx, srv := serve(t)
	// A short watchdog lease: its renewal, a third of it away, finds the
	// member lost.
	c := newClient(t, srv, WithWatchdogLease(time.Second))
	other, x := newClient(t, srv), newClient(t, srv)
	names := inOrder(t, c, "lw-a", "lw-b", "lw-c")
	holder, err := other.Lock(ctx, names[1])
	require.NoError(t, err)
	got := lockAllInBackground(ctx, c, names)
	waitForQueued(t, srv, names[1], 1)
	n, err := x.ForceUnlock(ctx, names[0])
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "the set held its first member while it waited")
	stolen, err := x.Lock(ctx, names[0])
	require.NoError(t, err)
	require.Eventually(t, func() bool { return !holdsLive(c, names[0]) }, fast, 10*time.Millisecond,
		"the set's client never found its member lost")
	require.NoError(t, holder.Unlock(ctx))
	o := receiveSet(t, got)
	require.ErrorIs(t, o.err, ErrLockLost)
	require.ErrorContains(t, o.err, names[0])
	require.Nil(t, o.s)
	requireHeldOnceBy(ctx, t, x, stolen.Owner(), names[0])
	rdb := admin(t, srv)
	requireNothingLeft(ctx, t, c, rdb, names[1:]...)
	require.NoError(t, stolen.Unlock(ctx))
	requireNothingLeft(ctx, t, c, rdb, names...)
}

// setRestartWindow bounds how long after Redis restarts without its data
// a set's client may still believe it holds a member: its pub/sub
// reconnect retries with a backoff of up to notify's maxBackoff (1 s),
// then its check of the holds (checkHolds) is one round trip; the other
// second is for scheduling on a loaded machine (as restartWindow in
// attack_restart_test.go, the same reasoning for one lock).
const setRestartWindow = 2 * time.Second

// requireSetLost waits, up to setRestartWindow, for s's Context to end
// with ErrLockLost naming one of its members.
func requireSetLost(t *testing.T, s *LockSet) {
	t.Helper()
	select {
	case <-s.Context().Done():
	case <-time.After(setRestartWindow):
		t.Fatalf("the set's Context alive %v after the restart", setRestartWindow)
	}
	cause := context.Cause(s.Context())
	require.ErrorIs(t, cause, ErrLockLost)
	require.True(t, slices.ContainsFunc(s.Names(), func(n string) bool { return strings.Contains(cause.Error(), n) }),
		"the cause names no member: %v", cause)
}

// Property 7 against a restart: Redis restarts without its data while a
// set holds every member. The set's Context ends with ErrLockLost naming
// a member; another client then takes the whole set, and the old set's
// Unlock (tokens refused) leaves that set's holds alone.
func TestLockSetRestartWhileHeld(t *testing.T) {
	ctx, srv := serve(t)
	c, x := newClient(t, srv), newClient(t, srv)
	warmGrantLine(ctx, t, c) // the check after a reconnect rides on that line
	names := inOrder(t, c, "rh-a", "rh-b", "rh-c")
	s, err := c.LockAll(ctx, names)
	require.NoError(t, err)
	srv.Restart()
	requireSetLost(t, s)
	again, err := x.LockAll(ctx, names)
	require.NoError(t, err)
	require.ErrorIs(t, s.Unlock(ctx), ErrLockLost)
	requireHeldOnceBy(ctx, t, x, again.members[0].hold.owner, names...)
	require.NoError(t, again.Unlock(ctx))
	requireNothingLeft(ctx, t, c, admin(t, srv), names...)
}

// Property 7 against a restart: Redis restarts without its data while a
// set holds its first member and waits for the second. The set either
// fails, holding nothing (its client found the first member lost before
// the set was whole), or is granted the rest and its Context ends with
// ErrLockLost within setRestartWindow: which one comes first is a race
// between the client's check of its holds and its waiter's look after
// the reconnect. Either way nothing of it is left once it is unlocked.
func TestLockSetRestartWhileWaiting(t *testing.T) {
	ctx, srv := serve(t)
	c, other := newClient(t, srv), newClient(t, srv)
	names := inOrder(t, c, "rw-a", "rw-b", "rw-c")
	holder, err := other.Lock(ctx, names[1])
	require.NoError(t, err)
	got := lockAllInBackground(ctx, c, names)
	waitForQueued(t, srv, names[1], 1)
	srv.Restart()
	var o setOutcome
	select {
	case o = <-got:
	case <-time.After(fast + setRestartWindow):
		t.Fatal("LockAll did not return after the restart")
	}
	rdb := admin(t, srv)
	t.Logf("after the restart the set returned %v", o.err)
	if o.err != nil {
		require.ErrorIs(t, o.err, ErrNotObtained)
		require.ErrorIs(t, o.err, ErrLockLost)
		require.ErrorContains(t, o.err, names[0])
	} else {
		requireSetLost(t, o.s)
		require.ErrorIs(t, o.s.Unlock(ctx), ErrLockLost)
	}
	require.Eventually(t, func() bool { return allFree(ctx, t, c, names) }, fast, 10*time.Millisecond,
		"the set's members were not given back")
	require.ErrorIs(t, holder.Unlock(ctx), ErrLockLost)
	requireNothingLeft(ctx, t, c, rdb, names...)
}

// lateRead is the read timeout of TestLockSetLateGrant's set client. The
// test holds the replies back once the set is queued, which may be before
// the reply to its queuing call reached it: that call then fails at the
// read timeout, as any call to a Redis that stopped answering, and the set
// returns that much later.
const lateRead = time.Second

// Property 7 against a grant that comes late: the set waits for its
// second member; that member is granted to the set's waiter while every
// reply to the set's client is held back (its grant message too), and the
// set's ctx ends before the grant is heard. The set must then hold
// nothing and wait nowhere (its leave finds the grant and hands it on, or
// its give-back releases it), and the member goes to the next waiter; or,
// if it took the grant after all, hold the whole set.
func TestLockSetLateGrant(t *testing.T) {
	for _, warm := range []bool{false, true} {
		t.Run(fmt.Sprintf("line-kept-%v", warm), func(t *testing.T) {
			ctx, srv := serve(t)
			c, px := proxiedClient(ctx, t, srv, lateRead, -1)
			other, next := newClient(t, srv), newClient(t, srv)
			if warm {
				warmGrantLine(ctx, t, c)
			}
			names := inOrder(t, c, "lg-a", "lg-b", "lg-c")
			holder, err := other.Lock(ctx, names[1])
			require.NoError(t, err)
			callCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			got := lockAllInBackground(callCtx, c, names)
			waitForQueued(t, srv, names[1], 1)
			px.HoldReplies()
			require.NoError(t, holder.Unlock(ctx))
			require.NotEmpty(t, holderOf(ctx, t, other, names[1]), "granted to the set's waiter")
			queued := lockInBackground(ctx, next, names[1])
			waitForQueued(t, srv, names[1], 1)
			cancel()
			var o setOutcome
			select {
			case o = <-got:
			case <-time.After(fast + lateRead):
				t.Fatal("LockAll did not return")
			}
			px.ReleaseReplies()
			rdb := admin(t, srv)
			if o.err == nil {
				t.Log("the set took the late grant")
				requireHeldOnceBy(ctx, t, other, o.s.members[0].hold.owner, names...)
				require.NoError(t, o.s.Unlock(ctx))
			} else {
				require.ErrorIs(t, o.err, context.Canceled)
			}
			l := receive(t, queued)
			requireHeldOnceBy(ctx, t, other, l.Owner(), names[1])
			require.Eventually(t, func() bool { return allFree(ctx, t, other, []string{names[0], names[2]}) }, fast,
				10*time.Millisecond, "the set's members were not given back")
			require.NoError(t, l.Unlock(ctx))
			requireNothingLeft(ctx, t, other, rdb, names...)
		})
	}
}

// Property 5 against a reused owner: a set taken WithOwner and a fixed
// lease outlives that lease; the same owner then takes the same names
// again. The old set's Context has ended with ErrLockLost, and its Unlock
// (its tokens refused) releases none of the new set's holds.
func TestLockSetReusedOwnerAfterLease(t *testing.T) {
	ctx, srv := serve(t)
	c := newClient(t, srv)
	names := inOrder(t, c, "ro-a", "ro-b", "ro-c")
	owned := WithOwner(ctx, "reused")
	old, err := c.LockAll(owned, names, WithLease(300*time.Millisecond))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return allFree(ctx, t, c, names) }, fast, 10*time.Millisecond,
		"the fixed lease never ran out")
	require.ErrorIs(t, context.Cause(old.Context()), ErrLockLost)
	again, err := c.LockAll(owned, names)
	require.NoError(t, err)
	for _, name := range names {
		require.Greater(t, again.Token(name), old.Token(name), name)
	}
	require.ErrorIs(t, old.Unlock(ctx), ErrLockLost)
	requireHeldOnceBy(ctx, t, c, "reused", names...)
	require.NoError(t, again.Unlock(ctx))
	requireNothingLeft(ctx, t, c, admin(t, srv), names...)
}

// Property 7, cancellation at the set's own steps: the ctx ends while the
// set's script call is on the wire (run by Redis, its reply held back),
// whether that script queued the set's waiter (the grant line kept) or
// not; and Unlock is called with an ended ctx. Either way the set ends
// holding nothing and waiting nowhere.
func TestLockSetCancelledDuringScripts(t *testing.T) {
	for _, warm := range []bool{false, true} {
		t.Run(fmt.Sprintf("acquire/line-kept-%v", warm), func(t *testing.T) {
			ctx, srv := serve(t)
			c, px := proxiedClient(ctx, t, srv, 5*time.Second, -1)
			other := newClient(t, srv)
			if warm {
				warmGrantLine(ctx, t, c)
			}
			warmSetScripts(ctx, t, c)
			names := inOrder(t, c, "cs-a", "cs-b", "cs-c")
			holder, err := other.Lock(ctx, names[1])
			require.NoError(t, err)
			shape := acquireSetShape(len(names), true)
			if warm {
				shape = queuingSetShape(len(names))
			}
			release := px.HoldNextReply(shape)
			callCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			got := lockAllInBackground(callCtx, c, names)
			require.Eventually(t, func() bool { return holderOf(ctx, t, other, names[0]) != "" }, fast,
				time.Millisecond, "the set's script did not run")
			px.mu.Lock()
			held := px.rule == nil // the rule was taken: its reply is held
			px.mu.Unlock()
			require.True(t, held, "the set's script was not the one held")
			cancel()
			release()
			o := receiveSet(t, got)
			require.ErrorIs(t, o.err, ErrNotObtained)
			require.ErrorIs(t, o.err, context.Canceled)
			rdb := admin(t, srv)
			requireNothingLeft(ctx, t, other, rdb, names[0], names[2])
			require.Zero(t, rdb.Exists(ctx, lockKey(names[1])+":queue").Val(), "the set's waiter is left")
			require.NoError(t, holder.Unlock(ctx))
			requireNothingLeft(ctx, t, other, rdb, names...)
		})
	}
	t.Run("unlock", func(t *testing.T) {
		ctx, srv := serve(t)
		ended, cancel := context.WithCancel(ctx)
		cancel()
		unlockToWaiter(ctx, t, srv, newClient(t, srv), []string{"cu-a", "cu-b", "cu-c"}, ended, func() {})
	})
}
