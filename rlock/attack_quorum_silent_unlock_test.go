package rlock

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// H holds a quorum lock on 3 nodes and W waits for it with
// WaitAtMost(60 ms). Node 2 goes silent (black-holed: its sockets stay
// open, nothing answers) 15 ms before H unlocks, and H unlocks from 5 ms
// before W's WaitAtMost runs out to 5 ms after, as W gives up. Nodes 0 and
// 1 hold H's hold and answer, so its release has its majority ("a release
// or renewal returns once a majority has decided it"): Unlock returns nil
// while node 2 is still silent, and nothing is left once W is done.
//
// Outside attack 3 (finding F2) ran this without looking where H's hold
// was, and one Unlock in a few runs waited 10-15 s for node 2 and returned
// ErrNoQuorum naming it (5 runs of 21, 7 rounds of 441). Each such hold
// was on a bare majority with node 2: H's own Lock, before W called Lock
// on the name, heard node 0 or 1 2-6 ms after the others, past the look's
// listening (its server was busy compiling a script another Client sent
// it for the first time, or the acquire went out late under load), and
// that late grant, its token above the hold's, was given back. Late
// grants now join the hold (TestAttackQuorumLateGrant*), so each round
// first requires H's hold on nodes 0 and 1 (requireHeldOn).
func TestAttackQuorumUnlockWithSilentNodeAndWaiter(t *testing.T) {
	ctx := testCtx(t)
	srvs := startNodes(t, 3)
	pxs := proxiesTo(t, srvs)
	// A release that waited for node 2 could return only once its read
	// timed out: past within's bound.
	slowRead := func(o *redis.Options) { o.ReadTimeout = 10 * time.Second }
	h, w := quorumThrough(t, pxs, slowRead), quorumThrough(t, pxs, slowRead)
	const wait, rounds = 60 * time.Millisecond, 21
	for round := range rounds {
		name := fmt.Sprintf("silent%d", round)
		lh, err := h.Lock(ctx, name)
		require.NoError(t, err)
		requireHeldOn(t, ctx, srvs, lh, 0, 1)
		res := make(chan acquired, 1)
		begin := time.Now()
		go func() {
			l, err := w.Lock(ctx, name, WaitAtMost(wait))
			res <- acquired{lock: l, err: err}
		}()
		at := begin.Add(wait + time.Duration(round-rounds/2)*500*time.Microsecond)
		time.Sleep(time.Until(at.Add(-15 * time.Millisecond)))
		pxs[2].Blackhole()
		time.Sleep(time.Until(at))
		unlocked := make(chan error, 1)
		go func() { unlocked <- lh.Unlock(ctx) }()
		err = within(t, unlocked, fmt.Sprintf("round %d: H's Unlock waits for the silent node", round))
		pxs[2].Restore()
		require.NoError(t, err, "round %d: H's Unlock, nodes 0 and 1 holding it and answering", round)
		if a := withinBy(t, res, time.Now().Add(10*time.Second), "W did not return"); a.err == nil {
			require.NoError(t, a.lock.Unlock(ctx))
		}
		requireNothingLeftOnNodes(t, ctx, srvs, name)
	}
}

// requireHeldOn requires l's hold on every node of want: each one's
// counter comes to l's token (its round 1 ran there, and a late grant's
// join set it back) while l's owner holds the lock there.
func requireHeldOn(t *testing.T, ctx context.Context, srvs []*redistest.Server, l *Lock, want ...int) {
	t.Helper()
	key := lockKey(l.Name())
	for _, i := range want {
		node := admin(t, srvs[i])
		require.Eventually(t, func() bool {
			counter, err := node.Get(ctx, key+":fence").Uint64()
			return err == nil && counter == l.Token() && node.HExists(ctx, key, l.Owner()).Val()
		}, fast, 2*time.Millisecond, "node %d does not hold the hold under its token %d", i, l.Token())
	}
}
