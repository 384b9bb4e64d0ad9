package rlock

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// An outside reviewer's attacks on a late grant's set-back (b6c2f1d,
// reverted): a grant that answered after the look stopped listening,
// under a token above the hold's, joined the hold with its node's counter
// set back to the hold's token. H's acquire on node 2 is held in the
// network while H ends on nodes 0 and 1, released (or expired), and a
// later hold H' of another owner is counted on nodes 1 and 2 with T' > T.
// Then H's acquire reaches node 2, grants under t_2 > T', and H's client,
// given that late grant, set node 2's counter back to T < T'. A third hold H'' on nodes 0 and 2
// then reads counters of at most T there, and its token falls below T'.
// That change's proof took T to be above every counted token node 2's
// counter held; it is not above T', a counted hold's that held node 2
// before H's grant ran there. All three failed with it; with late grants
// above the hold's token given back by their own token (reentrant's doc,
// Quorum mode: no counter is lowered), node 2's counter stays above T'.
//
// T' is above the clocks (by an hour here) as a quorum token is whenever
// one of its nodes' clock is ahead of the others': a quorum's tokens are
// the largest of its nodes' clock readings, and the doc allows any skew.
// Node 1's counter stands for such a node's earlier token. Without it,
// H'' would read the clock, which ran past T' on one machine: the clocks,
// not the counters, would keep tokens rising.

// A late grant that comes after H's Unlock: b6c2f1d's joinLate gave it
// back, but set back to T first.
func TestAttackQuorumSetBackAfterUnlockUndercutsLaterHold(t *testing.T) {
	ctx := testCtx(t)
	srvs := startNodes(t, 3)
	h, pxs := setBackHold(t, ctx, srvs, "setback-unlock")
	require.NoError(t, h.Unlock(ctx), "decided by nodes 0 and 1")
	later := setBackUndercut(t, ctx, srvs, pxs, h)
	require.Greater(t, later[1], later[0], "H'' (nodes 0 and 2) after H' (nodes 1 and 2): its token must be above")
}

// A late grant that comes after H expired on nodes 0 and 1 (a fixed
// lease, no release sent): b6c2f1d's joinLate joined it to H, its counter
// set back to T, though H had no majority any more and H' had held node 2
// since.
func TestAttackQuorumSetBackAfterExpiryUndercutsLaterHold(t *testing.T) {
	ctx := testCtx(t)
	srvs := startNodes(t, 3)
	h, pxs := setBackHold(t, ctx, srvs, "setback-expiry", WithLease(steadyLease))
	select {
	case <-h.Context().Done():
	case <-ctx.Done():
		t.Fatal("H's Context outlived its fixed lease")
	}
	require.Eventually(t, func() bool { return wkLeft(ctx, srvs[:2], h.Name()) == "" },
		fast, 10*time.Millisecond, "H did not expire on nodes 0 and 1")
	later := setBackUndercut(t, ctx, srvs, pxs, h)
	require.Greater(t, later[1], later[0], "H'' (nodes 0 and 2) after H' (nodes 1 and 2): its token must be above")
}

// A late grant that comes after a ForceUnlock ended H on every node: H's
// Context is still live then (nothing told its client), so no check of
// H's validity by its client tells this grant from one that ran while H
// held: b6c2f1d's joinLate joined it, set back to T. (A fixed lease, so
// that node 2's part ends by itself.)
func TestAttackQuorumSetBackAfterForceUnlockUndercutsLaterHold(t *testing.T) {
	ctx := testCtx(t)
	srvs := startNodes(t, 3)
	h, pxs := setBackHold(t, ctx, srvs, "setback-force", WithLease(2*steadyLease))
	n, err := newQuorumClient(t, srvs).ForceUnlock(ctx, h.Name())
	require.NoError(t, err)
	require.Positive(t, n, "ForceUnlock found H")
	later := setBackUndercut(t, ctx, srvs, pxs, h)
	require.Greater(t, later[1], later[0], "H'' (nodes 0 and 2) after H' (nodes 1 and 2): its token must be above")
}

// setBackHold takes H on nodes 0 and 1 through proxies, its acquire on
// node 2 held in the network (read timeout 10 s, so that its reply is
// still awaited when it comes).
func setBackHold(t *testing.T, ctx context.Context, srvs []*redistest.Server, name string, opts ...LockOption) (*Lock, []*proxy) {
	t.Helper()
	pxs := proxiesTo(t, srvs)
	a := quorumThrough(t, pxs, func(o *redis.Options) { o.ReadTimeout = 10 * time.Second })
	pxs[2].Blackhole()
	h, err := a.Lock(ctx, name, opts...)
	require.NoError(t, err)
	require.True(t, holdsOn(t, ctx, srvs, h, []int{0, 1}), "H on nodes 0 and 1")
	return h, pxs
}

// setBackUndercut runs H' on nodes 1 and 2 once H has ended on nodes 0
// and 1, lets H's acquire reach node 2, and then runs H” on nodes 0 and
// 2. It returns the tokens of H' and H”. It requires node 2's counter to
// stay at least T' once H's late grant there is settled.
func setBackUndercut(t *testing.T, ctx context.Context, srvs []*redistest.Server, pxs []*proxy, h *Lock) [2]uint64 {
	t.Helper()
	fence := lockKey(h.Name()) + ":fence"
	ahead := time.Now().Add(time.Hour).UnixMicro()
	require.NoError(t, admin(t, srvs[1]).Set(ctx, fence, ahead, 3*time.Hour).Err())

	hp := lockOnTwo(t, ctx, srvs, h.Name(), 0)
	require.Greater(t, hp.Token(), h.Token())
	tp := hp.Token()
	require.NoError(t, hp.Unlock(ctx))

	t.Logf("H's Context when its acquire reaches node 2: %v", h.Context().Err())
	pxs[2].Restore() // H's acquire grants on node 2 under t_2 > T'
	node2 := admin(t, srvs[2])
	require.Eventually(t, func() bool {
		counter, err := node2.Get(ctx, fence).Uint64()
		return err == nil && counter != tp && wkLeft(ctx, srvs[2:], h.Name()) == ""
	}, 10*time.Second, 10*time.Millisecond, "H's late grant on node 2 was not settled (given back, or its lease over)")
	counter, err := node2.Get(ctx, fence).Uint64()
	require.NoError(t, err)
	t.Logf("T=%d T'=%d node 2's counter after H's late grant=%d", h.Token(), tp, counter)
	if counter < tp {
		t.Errorf("node 2's counter %d fell below T'=%d, the token of a counted hold that held node 2 before", counter, tp)
	}

	hpp := lockOnTwo(t, ctx, srvs, h.Name(), 1)
	defer func() { require.NoError(t, hpp.Unlock(ctx)) }()
	t.Logf("T''=%d", hpp.Token())
	return [2]uint64{tp, hpp.Token()}
}

// lockOnTwo takes name by a new quorum Client while another owner holds
// node off alone (a plain lock there), so that the hold is on the other
// two nodes, and gives node off back once the hold is made.
func lockOnTwo(t *testing.T, ctx context.Context, srvs []*redistest.Server, name string, off int) *Lock {
	t.Helper()
	z, err := newClient(t, srvs[off]).Lock(ctx, name)
	require.NoError(t, err)
	l, err := newQuorumClient(t, srvs).TryLock(ctx, name)
	require.NoError(t, err)
	require.NoError(t, z.Unlock(ctx))
	return l
}
