package rlock

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/notify/slot"
)

// inOrder is names, once each, in the canonical order.
func inOrder(t *testing.T, c *Client, names ...string) []string {
	t.Helper()
	locks, err := c.setLocks(names)
	require.NoError(t, err)
	out := make([]string, len(locks))
	for i, p := range locks {
		out[i] = p.name()
	}
	return out
}

// sameSlotNames is n lock names of the form prefix-i whose keys are all in
// one cluster slot.
func sameSlotNames(prefix string, n int) []string {
	bySlot := map[int][]string{}
	for i := 0; ; i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		s := slot.Of(lockKey(name))
		if bySlot[s] = append(bySlot[s], name); len(bySlot[s]) == n {
			return bySlot[s]
		}
	}
}

// holderOf is the one owner holding name, or "".
func holderOf(ctx context.Context, t *testing.T, c *Client, name string) string {
	t.Helper()
	st, err := c.Inspect(ctx, name)
	require.NoError(t, err)
	for owner := range st.Holders {
		return owner
	}
	return ""
}

// lockAllInBackground runs LockAll (opts) on c and sends its outcome.
func lockAllInBackground(ctx context.Context, c *Client, names []string, opts ...LockOption) <-chan setOutcome {
	out := make(chan setOutcome, 1)
	go func() {
		s, err := c.LockAll(ctx, names, opts...)
		out <- setOutcome{s, err}
	}()
	return out
}

// setOutcome is what a LockAll returned.
type setOutcome struct {
	s   *LockSet
	err error
}

// receiveSet waits for a LockAll's outcome, up to fast.
func receiveSet(t *testing.T, out <-chan setOutcome) setOutcome {
	t.Helper()
	select {
	case o := <-out:
		return o
	case <-time.After(fast):
		t.Fatal("LockAll did not return")
	}
	return setOutcome{}
}

// warmGrantLine has c keep its grant line, as it does from its first
// wait on: a set's script then queues the set's waiter itself.
func warmGrantLine(ctx context.Context, t *testing.T, c *Client) {
	t.Helper()
	p, err := c.plainLock("warm-line")
	require.NoError(t, err)
	s, err := p.subscribe(ctx, c, true)
	require.NoError(t, err)
	s.close()
	require.True(t, c.grants.ready())
}

// receiveWholeSet waits for a LockAll's set, up to fast, and checks that
// its owner holds each of names once.
func receiveWholeSet(ctx context.Context, t *testing.T, c *Client, out <-chan setOutcome, names ...string) *LockSet {
	t.Helper()
	o := receiveSet(t, out)
	require.NoError(t, o.err)
	requireHeldOnceBy(ctx, t, c, o.s.members[0].hold.owner, names...)
	return o.s
}

// requireHeldOnceBy checks that owner holds each of names with one count.
func requireHeldOnceBy(ctx context.Context, t *testing.T, c *Client, owner string, names ...string) {
	t.Helper()
	for _, name := range names {
		st, err := c.Inspect(ctx, name)
		require.NoError(t, err)
		require.Equal(t, map[string]int64{owner: 1}, st.Holders, name)
	}
}

// givenOwner is ctx, with WithOwner's owner if given.
func givenOwner(ctx context.Context, given bool) context.Context {
	if given {
		return WithOwner(ctx, "given")
	}
	return ctx
}

// Property 1: a LockAll cancelled while it waits, at any member past the
// first, holds nothing and waits nowhere once it returns: whether its own
// script queued it (a client that keeps its grant line) or Lock's acquire
// did.
func TestLockAllCancelledLeavesNothing(t *testing.T) {
	for _, warm := range []bool{false, true} {
		for wait := 1; wait <= 2; wait++ {
			t.Run(fmt.Sprintf("line-kept-%v/waiting-on-member-%d", warm, wait+1), func(t *testing.T) {
				testLockAllCancelled(t, warm, wait)
			})
		}
	}
}

func testLockAllCancelled(t *testing.T, warm bool, wait int) {
	ctx, srv := serve(t)
	c, other := newClient(t, srv), newClient(t, srv)
	if warm {
		warmGrantLine(ctx, t, c)
	}
	names := inOrder(t, c, "c-a", "c-b", "c-c")
	holder, err := other.Lock(ctx, names[wait])
	require.NoError(t, err)
	callCtx, cancel := context.WithCancel(ctx)
	got := lockAllInBackground(callCtx, c, names)
	waitForQueued(t, srv, names[wait], 1)
	for _, name := range names[:wait] {
		require.NotEmpty(t, holderOf(ctx, t, c, name), "the set holds what it has while it waits")
	}
	cancel()
	o := receiveSet(t, got)
	require.ErrorIs(t, o.err, ErrNotObtained)
	require.ErrorIs(t, o.err, context.Canceled)
	require.Nil(t, o.s)
	rdb := admin(t, srv)
	requireNothingLeft(ctx, t, c, rdb, names[:wait]...)
	requireNothingLeft(ctx, t, c, rdb, names[wait+1:]...)
	require.Zero(t, rdb.Exists(ctx, lockKey(names[wait])+":queue").Val(), "the set's waiter is left")
	require.NoError(t, holder.Unlock(ctx))
	requireNothingLeft(ctx, t, c, rdb, names...)
}

// Property 1: TryLockAll on a set partly held by another owner gives back
// what it took before the held member, and WaitAtMost running out does
// the same.
func TestTryLockAllPartlyHeldLeavesNothing(t *testing.T) {
	for _, opts := range [][]LockOption{nil, {WaitAtMost(200 * time.Millisecond)}} {
		t.Run(fmt.Sprintf("options-%d", len(opts)), func(t *testing.T) {
			ctx, srv := serve(t)
			c, other := newClient(t, srv), newClient(t, srv)
			names := inOrder(t, c, "t-a", "t-b", "t-c", "t-d")
			holder, err := other.Lock(ctx, names[2])
			require.NoError(t, err)
			s, err := c.TryLockAll(ctx, names, opts...)
			require.ErrorIs(t, err, ErrNotObtained)
			require.NotErrorIs(t, err, context.DeadlineExceeded)
			require.ErrorContains(t, err, names[2])
			require.Nil(t, s)
			rdb := admin(t, srv)
			requireNothingLeft(ctx, t, c, rdb, names[0], names[1], names[3])
			require.Zero(t, rdb.Exists(ctx, lockKey(names[2])+":queue").Val(), "the set's waiter is left")
			require.NoError(t, holder.Unlock(ctx))
			requireNothingLeft(ctx, t, c, rdb, names...)
		})
	}
}

// Property 3: a queued LockAll is ahead of the later single-key Locks and
// LockAlls on the member it waits for and on the members it holds: once
// the holder releases, the set gets every member before any of them gets
// one, and they follow in the order they came.
func TestLockAllNotStarved(t *testing.T) {
	ctx, srv := serve(t)
	c := newClient(t, srv)
	names := inOrder(t, c, "s-a", "s-b", "s-c")
	holder, err := newClient(t, srv).Lock(ctx, names[1])
	require.NoError(t, err)
	setClient := newClient(t, srv)
	warmGrantLine(ctx, t, setClient) // its script queues it
	first := lockAllInBackground(ctx, setClient, names)
	waitForQueued(t, srv, names[1], 1)

	later := newClient(t, srv)
	single := lockInBackground(ctx, later, names[1])
	waitForQueued(t, srv, names[1], 2)
	held := lockInBackground(ctx, later, names[0]) // held by the set
	waitForQueued(t, srv, names[0], 1)
	second := lockAllInBackground(ctx, newClient(t, srv), names[1:])
	waitForQueued(t, srv, names[1], 3)

	require.NoError(t, holder.Unlock(ctx))
	require.NoError(t, receiveWholeSet(ctx, t, c, first, names...).Unlock(ctx))
	l := receive(t, single)
	require.Equal(t, l.Owner(), holderOf(ctx, t, c, names[1]), "the single Lock queued first goes first")
	m := receive(t, held)
	require.NoError(t, m.Unlock(ctx))
	select {
	case o := <-second:
		t.Fatalf("the later set got its members before the single Lock let go: %v", o.err)
	case <-time.After(50 * time.Millisecond):
	}
	require.NoError(t, l.Unlock(ctx))
	require.NoError(t, receiveWholeSet(ctx, t, c, second, names[1:]...).Unlock(ctx))
	requireNothingLeft(ctx, t, c, admin(t, srv), names...)
}

// setWaitsForHeld starts a server and three names a < b < c in the
// canonical order, has a Lock h hold a, and a set {a, c} on another
// client wait for a.
func setWaitsForHeld(t *testing.T, prefix string) (ctx context.Context, srv *redistest.Server, c *Client, names []string, h *Lock, waiting <-chan setOutcome) {
	ctx, srv = serve(t)
	c = newClient(t, srv)
	names = inOrder(t, c, prefix+"-a", prefix+"-b", prefix+"-c")
	h, err := c.Lock(ctx, names[0])
	require.NoError(t, err)
	other := newClient(t, srv)
	warmGrantLine(ctx, t, other)
	waiting = lockAllInBackground(ctx, other, []string{names[0], names[2]})
	waitForQueued(t, srv, names[0], 1)
	return ctx, srv, c, names, h, waiting
}

// takeNext has the holder of names[0] take name next through nested, with
// Lock (kind "Lock") or with a LockAll of names[0] and name, and let go.
func takeNext(ctx, nested context.Context, c *Client, kind string, names []string, name string) error {
	if kind == "Lock" {
		m, err := c.Lock(nested, name)
		if err != nil {
			return err
		}
		return m.Unlock(ctx)
	}
	s, err := c.LockAll(nested, []string{names[0], name})
	if err != nil {
		return err
	}
	return s.Unlock(ctx)
}

// A caller holding a set's first member (a Lock) takes a later member
// through that lock's Context, with Lock or LockAll, as the ordering rule
// allows, while another set waits for that first member: the caller must
// not wait for the waiting set, which waits for the caller. So a waiting
// set cannot be ahead of every later call on the members after the one it
// waits for: not of this one.
func TestLockAllNestedPastWaitingSet(t *testing.T) {
	for _, kind := range []string{"Lock", "LockAll"} {
		t.Run(kind, func(t *testing.T) {
			ctx, srv, c, names, l, waiting := setWaitsForHeld(t, "n")
			nested, cancel := context.WithTimeout(l.Context(), fast)
			defer cancel()
			require.NoError(t, takeNext(ctx, nested, c, kind, names, names[2]), "the nested call waited for the set that waits for it")
			require.NoError(t, l.Unlock(ctx))
			require.NoError(t, receiveWholeSet(ctx, t, c, waiting, names[0], names[2]).Unlock(ctx))
			requireNothingLeft(ctx, t, c, admin(t, srv), names...)
		})
	}
}

// A later set S2 takes a name b that the holder H of a waiting set S's
// first member a takes next (through its Context, with Lock or LockAll,
// as the ordering rule and LockAll's re-entry allow), and S2's next name
// c is one S waits to take after a. Were S ahead of S2 at c (property 3
// on every member), S2 would wait there holding b, H for S2 at b, and S
// for H at a: a circle. So S2 must take c past S, or give b back and
// retry, which property 2 forbids: property 3 cannot hold on the members
// after the one a set waits for. The circle needs no shared owner, so
// naming owners (see TestLockAllNestedPastWaitingSet) does not avoid it.
func TestLockAllLaterSetPastWaitingSet(t *testing.T) {
	for _, kind := range []string{"Lock", "LockAll"} {
		t.Run(kind, func(t *testing.T) {
			ctx, srv, c, names, h, waiting := setWaitsForHeld(t, "p")
			b, cn := names[1], names[2]
			later, cancelLater := context.WithTimeout(ctx, fast)
			defer cancelLater()
			s2 := lockAllInBackground(later, newClient(t, srv), []string{b, cn})
			// Inspect, not holderOf: Eventually runs the condition off the
			// test goroutine, where a require may not stop the test.
			require.Eventually(t, func() bool {
				st, err := c.Inspect(ctx, b)
				return err == nil && len(st.Holders) > 0
			}, fast, time.Millisecond, "the later set takes %s", b)
			nested, cancel := context.WithTimeout(h.Context(), fast)
			defer cancel()
			taken := make(chan error, 1)
			go func() { taken <- takeNext(ctx, nested, c, kind, names, b) }()
			o := receiveSet(t, s2)
			require.NoError(t, o.err, "the later set waited at %s for the set that waits for H, holding %s, which H waits for", cn, b)
			require.NoError(t, o.s.Unlock(ctx))
			require.NoError(t, <-taken, "H's next name after the later set let it go")
			require.NoError(t, h.Unlock(ctx))
			require.NoError(t, receiveWholeSet(ctx, t, c, waiting, names[0], cn).Unlock(ctx))
			requireNothingLeft(ctx, t, c, admin(t, srv), names...)
		})
	}
}
