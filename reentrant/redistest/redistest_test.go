package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseCommandStats(t *testing.T) {
	info := "# Commandstats\r\n" +
		"cmdstat_evalsha:calls=12,usec=340,usec_per_call=28.33,rejected_calls=0,failed_calls=1\r\n" +
		"cmdstat_client|list:calls=3,usec=9,usec_per_call=3.00\r\n" +
		"\r\n"
	got, err := ParseCommandStats(info)
	require.NoError(t, err)
	require.Equal(t, CommandStats{"evalsha": 12, "client|list": 3}, got)

	_, err = ParseCommandStats("cmdstat_get:usec=1\r\n")
	require.Error(t, err)

	before := CommandStats{"evalsha": 10, "get": 4}
	require.Equal(t, CommandStats{"evalsha": 2, "client|list": 3}, got.Sub(before))
	require.EqualValues(t, 15, got.Total())
}

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
