package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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

// With AppendFsyncAlways a server killed (SIGKILL, no shutdown) comes back
// with every write it answered, after Restart and after Kill and a later
// Relaunch alike; while killed, it answers nothing.
func TestPersistentServerKeepsWhatItAnswered(t *testing.T) {
	s := Start(t, AppendFsyncAlways...)
	rdb := s.Client(func(o *redis.Options) { o.MaxRetries = -1 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, rdb.Set(ctx, "k", "1", 0).Err())
	s.Restart()
	require.Eventually(t, func() bool { return rdb.Ping(ctx).Err() == nil }, 5*time.Second, 20*time.Millisecond)
	require.Equal(t, "1", rdb.Get(ctx, "k").Val())

	require.NoError(t, rdb.Incr(ctx, "k").Err())
	s.Kill()
	require.False(t, s.Running())
	require.Error(t, rdb.Ping(ctx).Err(), "a killed server answers nothing")
	s.Relaunch()
	require.True(t, s.Running())
	require.Eventually(t, func() bool { return rdb.Ping(ctx).Err() == nil }, 5*time.Second, 20*time.Millisecond)
	require.Equal(t, "2", rdb.Get(ctx, "k").Val())
}
