package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestServerLifecycle(t *testing.T) {
	s := Start(t)
	rdb := s.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, rdb.Set(ctx, "k", "v", 0).Err())

	s.Restart() // no persistence: the dataset is gone
	require.Eventually(t, func() bool { return rdb.Ping(ctx).Err() == nil }, 5*time.Second, 20*time.Millisecond)
	n, err := rdb.Exists(ctx, "k").Result()
	require.NoError(t, err)
	require.Zero(t, n)

	stats, err := ReadCommandStats(ctx, rdb)
	require.NoError(t, err)
	require.Positive(t, stats["exists"])
}
