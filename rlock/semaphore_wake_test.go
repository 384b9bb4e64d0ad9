package rlock

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// callCounter is a go-redis hook that counts the commands its client
// sends, pipelined or not; pub/sub's own commands do not pass through it.
type callCounter struct{ n atomic.Int64 }

func (c *callCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *callCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

func (c *callCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// countedClient is newClient on a Redis client whose commands calls counts.
func countedClient(t *testing.T, srv *redistest.Server, calls *callCounter) *Client {
	t.Helper()
	rdb := srv.Client()
	rdb.AddHook(calls)
	c, err := New(rdb)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Wake-ups per release equal the grants made (issue 25, property 4): a
// release that admits two waiters, of two clients, out of four queued
// makes exactly two grant messages, and the two waiters it does not admit
// are not woken: their clients make no call at all, where a herd's waiters
// would each try again.
func TestSemaphoreReleaseWakesOnlyTheWaitersItAdmits(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	held, err := newClient(t, srv).Semaphore("wake", 2).Acquire(ctx, 2)
	require.NoError(t, err)
	var calls [4]callCounter
	asks := make([]ask, len(calls))
	for i := range asks {
		asks[i] = ask{countedClient(t, srv, &calls[i]).Semaphore("wake", 2), 1}
	}
	queued := queueInOrder(ctx, t, srv, "wake", asks...)
	var sent [4]int64
	for i := range calls {
		sent[i] = calls[i].n.Load()
		require.Positive(t, sent[i], "waiter %d's queueing call is counted", i)
	}

	before := commandCalls(t, rdb)
	require.NoError(t, held.Release(ctx))
	admitted := []*Permit{receivePermit(t, queued[0]), receivePermit(t, queued[1])}
	requireWaiting(t, queued[2], "the third waiter got past a full semaphore")
	requireWaiting(t, queued[3], "the fourth waiter got past a full semaphore")
	after := commandCalls(t, rdb)
	require.EqualValues(t, 2, after["publish"]+after["spublish"]-before["publish"]-before["spublish"],
		"one grant message per admitted waiter, none for the others")
	for i := 2; i < 4; i++ {
		require.Equal(t, sent[i], calls[i].n.Load(), "waiter %d, not admitted, was woken and made a call", i)
	}

	for _, p := range admitted {
		require.NoError(t, p.Release(ctx))
	}
	for _, q := range queued[2:] {
		require.NoError(t, receivePermit(t, q).Release(ctx))
	}
	requireOnlyFence(t, rdb, "wake")
}
