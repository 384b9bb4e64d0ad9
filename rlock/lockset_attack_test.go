package rlock

import (
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
