package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// The delay proxy holds each direction back by its delay: a PING through
// it takes at least two delays, and it passes large values and pub/sub
// messages whole and in order. Only the lower bound is asserted, which
// load cannot break; how close a PING comes to it is a figure of the
// bench (the ping p50 column of an -rtt run).
func TestDelayProxyDelaysEachWay(t *testing.T) {
	srv := redistest.Start(t)
	const delay = 5 * time.Millisecond
	p, err := StartDelayProxy(srv.Addr, delay)
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	require.NoError(t, rdb.Ping(ctx).Err()) // dialled
	start := time.Now()
	require.NoError(t, rdb.Ping(ctx).Err())
	require.GreaterOrEqual(t, time.Since(start), 2*delay, "a round trip crosses the proxy twice")

	big := strings.Repeat("0123456789", 50_000) // many reads of the proxy's buffer
	require.NoError(t, rdb.Set(ctx, "big", big, 0).Err())
	got, err := rdb.Get(ctx, "big").Result()
	require.NoError(t, err)
	require.Equal(t, big, got)

	sub := rdb.Subscribe(ctx, "ch")
	defer sub.Close()
	_, err = sub.Receive(ctx)
	require.NoError(t, err)
	for i := range 3 {
		require.NoError(t, rdb.Publish(ctx, "ch", strings.Repeat("x", i+1)).Err())
	}
	for i := range 3 {
		msg, err := sub.ReceiveMessage(ctx)
		require.NoError(t, err)
		require.Equal(t, strings.Repeat("x", i+1), msg.Payload, "in order")
	}
}

func TestDelayProxyNeedsADelay(t *testing.T) {
	_, err := StartDelayProxy("127.0.0.1:1", 0)
	require.ErrorContains(t, err, "delay > 0")
}
