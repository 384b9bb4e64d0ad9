package rlock

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The assumption quorum mode rests on, broken and kept: a node restarted
// without its data and let back at once (no delay) forgets the hold and
// the counter it had. Holder A holds "forgot" on nodes 0 and 1 (node 2
// had another holder when A took it, whose lease has run out since), with
// a token that ran ahead of the clocks (node 0's counter was ahead). Node
// 1 restarts empty: then B takes the lock on nodes 1 and 2 at once, while A's Context is
// still live, so two holders overlap until A's next renewal finds the
// loss, and B's token is below A's. With appendfsync always, the same
// restart keeps the hold: B is refused.
func TestQuorumRestartWithoutDataBreaksTheAssumption(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		brokenA bool
	}{
		{"no persistence, no delay", nil, true},
		{"appendfsync always", []string{"--appendonly", "yes", "--appendfsync", "always"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			srvs := startNodes(t, 3, tc.args...)
			// A renews every second: B's first tries, on connections the
			// restarts broke, come well before.
			lease := 3 * time.Second
			a := newQuorumClient(t, srvs, WithWatchdogLease(lease))
			b := newQuorumClient(t, srvs, WithWatchdogLease(lease))
			ahead := uint64(time.Now().Add(time.Hour).UnixMicro())
			require.NoError(t, admin(t, srvs[0]).Set(ctx, lockKey("forgot")+":fence", fmt.Sprint(ahead), time.Hour).Err())
			// Node 2 is held by another owner when A takes the lock, whose
			// hold then ends there (its lease runs out).
			other := admin(t, srvs[2])
			require.NoError(t, other.HSet(ctx, lockKey("forgot"), "other", 1).Err())
			held, err := a.Lock(ctx, "forgot")
			require.NoError(t, err)
			require.Greater(t, held.Token(), ahead)
			require.NoError(t, other.Del(ctx, lockKey("forgot")).Err())
			// A's Lock queued it on node 2, and leaves that queue once it
			// returns; B must find node 2 free with nobody queued, or node
			// 2 goes to A's record (under load the leave came after B's tries).
			require.Eventually(t, func() bool { return other.Exists(ctx, lockKey("forgot")+":queue").Val() == 0 },
				fast, 5*time.Millisecond, "A's waiter left node 2's queue")
			srvs[1].Restart()

			var l *Lock
			for try := 0; try < 10 && (l == nil || err != nil); try++ {
				l, err = b.TryLock(ctx, "forgot") // the first may meet a broken connection
			}
			if !tc.brokenA {
				require.ErrorIs(t, err, ErrNotObtained, "the restarted node kept the hold")
				require.NoError(t, held.Context().Err())
				require.NoError(t, held.Unlock(ctx))
				return
			}
			require.NoError(t, err, "the restarted node forgot A's hold")
			require.NoError(t, held.Context().Err(), "two holders at once: A does not know yet")
			require.Less(t, l.Token(), held.Token(), "the token went backwards")
			select {
			case <-held.Context().Done():
				require.ErrorIs(t, context.Cause(held.Context()), ErrLockLost)
			case <-time.After(lease):
				t.Fatal("A's renewal did not find the loss within a lease")
			}
			require.NoError(t, l.Unlock(ctx))
		})
	}
}

// Round 2 is what orders tokens across holders that share a single node:
// A holds on nodes 0 and 1 (node 2 held by another owner) with a token
// from node 0, whose counter ran ahead of the clocks; B then holds on
// nodes 1 and 2 (node 0 held by another owner), and reads at node 1 the
// counter A's round 2 raised there, so B's token is above A's. The
// control puts node 1's counter back, once A has released, to what round
// 1 left there (its clock's token, as it would stay with no round 2): B's
// token is then below A's.
func TestQuorumRaiseOrdersTokens(t *testing.T) {
	for _, tc := range []struct {
		name    string
		noRaise bool
	}{{"round 2", false}, {"control: no round 2", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			srvs := startNodes(t, 3)
			c := newQuorumClient(t, srvs)
			key := lockKey("raise")
			ahead := uint64(time.Now().Add(time.Hour).UnixMicro())
			require.NoError(t, admin(t, srvs[0]).Set(ctx, key+":fence", fmt.Sprint(ahead), time.Hour).Err())
			require.NoError(t, admin(t, srvs[2]).HSet(ctx, key, "other", 1).Err())
			a, err := c.TryLock(ctx, "raise")
			require.NoError(t, err)
			require.Greater(t, a.Token(), ahead, "A's token is node 0's")
			fence := admin(t, srvs[1]).Get(ctx, key+":fence")
			require.Equal(t, fmt.Sprint(a.Token()), fence.Val(), "round 2 raised node 1's counter")
			require.NoError(t, a.Unlock(ctx))
			require.NoError(t, admin(t, srvs[2]).Del(ctx, key).Err())
			requireNothingLeftOnNodes(t, ctx, srvs[1:2], "raise")
			if tc.noRaise { // once A is gone: the counter is its hold's ID there
				require.NoError(t, admin(t, srvs[1]).Set(ctx, key+":fence", fmt.Sprint(time.Now().UnixMicro()), time.Hour).Err())
			}
			require.NoError(t, admin(t, srvs[0]).HSet(ctx, key, "other", 1).Err())
			b, err := c.TryLock(ctx, "raise")
			require.NoError(t, err, "B holds nodes 1 and 2")
			if tc.noRaise {
				require.Less(t, b.Token(), a.Token(), "without round 2 the token goes backwards")
			} else {
				require.Greater(t, b.Token(), a.Token(), "B read A's token at node 1")
			}
			require.NoError(t, b.Unlock(ctx))
		})
	}
}
