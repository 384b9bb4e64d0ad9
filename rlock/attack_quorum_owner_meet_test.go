package rlock

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Four calls of one WithOwner owner, on four quorum Clients, call Lock at
// the same moment on a free lock (outside attack 5). Each node grants the
// first call to come and lets the others re-enter that grant, so a call
// meets the others' grants, fails its look or its commit, and looks
// again. Every call must be granted, one hold of the owner, before
// unknownTTLWait has passed since the round began, and nothing is left
// after the Unlocks. Before, a look that met only the owner's other calls
// waited unknownTTLWait for a message that none of them sends: every run
// had calls granted 1–3 s after the start, the lock free meanwhile.
func TestAttackQuorumSharedOwnerSimultaneousLocks(t *testing.T) {
	for _, n := range []int{3, 5} {
		t.Run(fmt.Sprintf("%d nodes", n), func(t *testing.T) {
			ctx := testCtx(t)
			srvs := startNodes(t, n)
			cs := make([]*Client, 4)
			for i := range cs {
				cs[i] = newQuorumClient(t, srvs)
			}
			var slowest time.Duration
			for round := range 6 {
				name := fmt.Sprintf("meet%d", round)
				octx := WithOwner(ctx, fmt.Sprintf("owner-%d", round))
				ls := make([]*Lock, len(cs))
				errs := make([]error, len(cs))
				took := make([]time.Duration, len(cs))
				var wg sync.WaitGroup
				start := time.Now()
				for i, c := range cs {
					wg.Go(func() {
						ls[i], errs[i] = c.Lock(octx, name, WaitAtMost(8*time.Second))
						took[i] = time.Since(start)
					})
				}
				wg.Wait()
				require.NoError(t, errors.Join(errs...), "round %d", round)
				slowest = max(slowest, slices.Max(took))
				for i, l := range ls {
					require.Equal(t, ls[0].Token(), l.Token(), "round %d: one owner, one hold", round)
					if took[i] >= unknownTTLWait {
						t.Errorf("round %d: call %d granted %v after the start (all: %v)", round, i, took[i], took)
					}
				}
				for _, l := range ls {
					require.NoError(t, l.Unlock(ctx))
				}
				requireNothingLeftOnNodes(t, ctx, srvs, name)
			}
			t.Logf("the slowest call was granted %v after its round began", slowest)
		})
	}
}

// TestSharedOwnerWaitersReenterAtTheGrant on a quorum of 3: the owner's
// waiters queue on node 0 behind another owner's hold; its release there
// grants the first and wakes the second, whose look re-enters the hold the
// first makes (or meets it being made, and looks again soon).
func TestQuorumSharedOwnerWaitersReenterAtTheGrant(t *testing.T) {
	ctx := testCtx(t)
	srvs := startNodes(t, 3)
	requireOwnerWaitersReenter(t, ctx, newQuorumClient(t, srvs), srvs, func() *Client { return newQuorumClient(t, srvs) })
	requireNothingLeftOnNodes(t, ctx, srvs, "shared")
}
