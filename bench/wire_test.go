package bench

import (
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func TestRESPParserCountsCommandsAcrossSplits(t *testing.T) {
	// Bodies that look like RESP: a whole command (11 bytes), and an array
	// header right before the next command. Skipping either wrongly
	// miscounts.
	stream := []byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$11\r\n*2\r\n$1\r\nx\r\n\r\n" +
		"*2\r\n$4\r\nECHO\r\n$4\r\n*9\r\n\r\n" +
		"*1\r\n$4\r\nPING\r\n" +
		"*2\r\n$7\r\nEVALSHA\r\n$0\r\n\r\n")
	for split := range len(stream) + 1 {
		var p respWriteParser
		n := p.feed(stream[:split]) + p.feed(stream[split:])
		require.EqualValues(t, 4, n, "split at %d", split)
		require.Equal(t, parseArrayHeader, p.state, "ends between commands")
	}
	var p respWriteParser
	var n int64
	for _, b := range stream {
		n += p.feed([]byte{b})
	}
	require.EqualValues(t, 4, n, "byte by byte")
}

func TestCommandCounterSeesCommandsAndPubSub(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	var c commandCounter
	c.attach(rdb)
	ctx := testCtx(t)
	require.NoError(t, rdb.Ping(ctx).Err()) // dials: the handshake counts too
	dialed := c.n.Load()
	require.Greater(t, dialed, int64(1))

	for range 3 {
		require.NoError(t, rdb.Set(ctx, "k", "v", 0).Err())
	}
	require.EqualValues(t, 3, c.n.Load()-dialed)

	ps := rdb.Subscribe(ctx, "ch")
	defer ps.Close()
	_, err := ps.Receive(ctx)
	require.NoError(t, err)
	subscribed := c.n.Load()
	// SUBSCRIBE on an open PubSub: process hooks never see it, the wire does.
	require.NoError(t, ps.Subscribe(ctx, "ch2"))
	_, err = ps.Receive(ctx)
	require.NoError(t, err)
	require.Equal(t, subscribed+1, c.n.Load())
}
