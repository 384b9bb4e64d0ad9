package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The failover client follows the sentinel to the promoted replica.
func TestSentinelFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := StartSentinel(t)
	rdb := s.FailoverClient()
	require.NoError(t, rdb.Set(ctx, "baton:{x}", "before", 0).Err())
	first := s.Master
	s.Failover()
	require.NotSame(t, first, s.Master)
	addr, err := s.MasterAddr(ctx)
	require.NoError(t, err)
	require.Equal(t, s.Master.Addr, addr)
	require.Eventually(t, func() bool { return rdb.Set(ctx, "baton:{x}", "after", 0).Err() == nil },
		10*time.Second, 20*time.Millisecond, "the failover client writes to the new master")
	require.Equal(t, "after", s.Master.Admin().Get(ctx, "baton:{x}").Val())
}

// A deployment WithRelays fails over again and again: after each
// KillMaster the failover client writes to the new master, whose relay
// holds its replica's stream on demand (WAIT finds no acknowledgement
// while it holds) and whose replica is the killed server, restarted.
func TestSentinelKillMasterAgainAndAgain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := StartSentinel(t, WithRelays())
	rdb := s.FailoverClient()
	for i := range 3 {
		relay := s.RelayOf(s.Master)
		relay.Hold()
		require.NoError(t, rdb.Set(ctx, "k", i, 0).Err())
		require.Eventually(t, func() bool { return relay.Held() > 0 }, 5*time.Second, time.Millisecond, "the relay holds the write")
		require.Zero(t, rdb.Wait(ctx, 1, 100*time.Millisecond).Val(), "held: not acknowledged")
		killed := s.Master
		t.Logf("promoted %v after the kill", s.KillMaster())
		require.Same(t, killed, s.Replica)
		require.Eventually(t, func() bool { return rdb.Set(ctx, "k", "after", 0).Err() == nil },
			10*time.Second, 20*time.Millisecond, "the failover client writes to the new master")
		require.EqualValues(t, 1, rdb.Wait(ctx, 1, 5*time.Second).Val(), "the restarted replica acknowledges")
		require.Equal(t, "after", s.Replica.Admin().Get(ctx, "k").Val())
	}
}
