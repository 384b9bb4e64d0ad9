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
