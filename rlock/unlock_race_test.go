package rlock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// An Unlock whose release Redis confirmed was the end of a hold held to
// the end, even when the client cut the hold off locally while the reply
// was on its way: a ForceUnlock by the same client that ended other holds
// of the lock cuts off every hold of it in the client's table, this one
// included, though Redis had released it first. Before, that Unlock
// returned ErrLockLost (the ACL workload saw "lost: force-released" from a
// write whose release had granted the read the ForceUnlock then ended).
func TestUnlockConfirmedBeforeALocalCutOffIsNoLoss(t *testing.T) {
	ctx, srv := serve(t)
	p := startProxy(t, srv.Addr)
	c, err := New(p.client(t))
	require.NoError(t, err)
	defer c.Close()
	other := newClient(t, srv).RWLock("confirmed")

	warm, err := c.RWLock("confirmed").Lock(ctx) // the server caches the release script
	require.NoError(t, err)
	require.NoError(t, warm.Unlock(ctx))
	w, err := c.RWLock("confirmed").Lock(ctx)
	require.NoError(t, err)
	p.HoldReplies()
	unlocked := make(chan error, 1)
	go func() { unlocked <- w.Unlock(ctx) }()
	require.Eventually(t, func() bool {
		st, err := other.Inspect(ctx)
		return err == nil && st.Writer == ""
	}, fast, time.Millisecond, "the release did not run")
	h := (*handle)(w).hold
	h.cutOff(h.lost("force-released")) // as ForceUnlock's local cut-off does
	p.ReleaseReplies()
	require.NoError(t, within(t, unlocked, "the Unlock did not return"))
	requireOnlyFence(t, admin(t, srv), "confirmed")
}
