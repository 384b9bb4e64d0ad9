package rlock

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// A grant that comes after the Lock stopped listening joins the hold
// whatever its token: SIGKILL node 2 of a hold whose node 1 granted late
// (lateJoin), and the hold is on nodes 0 and 1, which release it: Unlock
// returns nil. Before late grants above the hold's token joined, node 1's
// was given back, the hold stayed on nodes 0 and 2 alone, and this Unlock
// returned ErrNoQuorum naming node 2 (the outside attack's
// TestAtk3QuorumUnlockRightAfterNodeKill met it about 1 round in 30 under
// its load).
func TestAttackQuorumLateGrantUnlockAfterNodeKill(t *testing.T) {
	ctx := testCtx(t)
	srvs := startNodes(t, 3)
	_, l := lateJoin(t, ctx, srvs, "late")
	srvs[2].Kill()
	requireUnlockByNodes01(t, ctx, srvs, l)
}

// The same with node 2 silent rather than down (black-holed: its sockets
// stay open, nothing answers): nodes 0 and 1 decide the release without
// it. Before, the Unlock waited for node 2's read timeout, each retry
// included, and returned ErrNoQuorum naming node 2; the outside attack's
// TestAttackQuorumUnlockWithSilentNodeAndWaiter failed so (finding F2)
// whenever H's hold was on a bare majority by chance.
func TestAttackQuorumLateGrantUnlockWithSilentNode(t *testing.T) {
	ctx := testCtx(t)
	srvs := startNodes(t, 3)
	pxs, l := lateJoin(t, ctx, srvs, "late", func(o *redis.Options) { o.ReadTimeout = 10 * time.Second })
	pxs[2].Blackhole()
	requireUnlockByNodes01(t, ctx, srvs, l)
	pxs[2].Restore()
}

// lateJoin makes a hold of name whose grant on node 1 comes late, by a
// quorum Client through proxies (opts for its go-redis clients). Node 1's
// acquire is held in the network until the Lock has its majority of nodes
// 0 and 2 and stopped listening: node 1 then grants under a token above
// the hold's (its clock ran on), and must join the hold all the same,
// under the hold's token.
func lateJoin(t *testing.T, ctx context.Context, srvs []*redistest.Server, name string, opts ...func(*redis.Options)) ([]*proxy, *Lock) {
	t.Helper()
	pxs := proxiesTo(t, srvs)
	q := quorumThrough(t, pxs, opts...)
	pxs[1].Blackhole()
	l, err := q.Lock(ctx, name)
	require.NoError(t, err)
	time.Sleep(5 * time.Millisecond) // node 1's clock passes the hold's token
	pxs[1].Restore()
	requireHeldOn(t, ctx, srvs, l, 1)
	return pxs, l
}

// requireUnlockByNodes01 unlocks l with node 2 lost: nodes 0 and 1 hold it
// and answer, so the Unlock returns nil within a short bound (a release
// that waited for node 2's read timeout would not), and leaves nodes 0
// and 1 free for another Client.
func requireUnlockByNodes01(t *testing.T, ctx context.Context, srvs []*redistest.Server, l *Lock) {
	t.Helper()
	unlocked := make(chan error, 1)
	go func() { unlocked <- l.Unlock(ctx) }()
	require.NoError(t, within(t, unlocked, "Unlock waits for node 2"))
	requireNothingLeftOnNodes(t, ctx, srvs[:2], l.Name())
	l2, err := newQuorumClient(t, srvs).TryLock(ctx, l.Name())
	require.NoError(t, err, "nodes 0 and 1 are free")
	require.NoError(t, l2.Unlock(ctx))
}
