package rlock

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// delGate is a go-redis hook that records the commands its client sends
// and holds every DEL back until open is called.
type delGate struct {
	mu     sync.Mutex // guards sent
	sent   [][]string // each command's name and args, as sent
	opened chan struct{}
	once   sync.Once
}

func newDelGate() *delGate { return &delGate{opened: make(chan struct{})} }

func (g *delGate) open() { g.once.Do(func() { close(g.opened) }) }

func (g *delGate) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *delGate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		g.record(cmd)
		if cmd.Name() == "del" {
			select {
			case <-g.opened:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return next(ctx, cmd)
	}
}

func (g *delGate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			g.record(cmd)
		}
		return next(ctx, cmds)
	}
}

func (g *delGate) record(cmd redis.Cmder) {
	args := make([]string, len(cmd.Args()))
	for i, a := range cmd.Args() {
		args[i] = fmt.Sprint(a)
	}
	args[0] = strings.ToLower(cmd.Name())
	g.mu.Lock()
	g.sent = append(g.sent, args)
	g.mu.Unlock()
}

// commands is what the client has sent so far.
func (g *delGate) commands() [][]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([][]string(nil), g.sent...)
}

// A Lock and Unlock in wire mode take 2 round trips, as Java's do: Unlock
// returns on the unlock script's reply, and sends the DEL of its latch
// without waiting for it. The latch is gone once the DEL goes through, and
// it is named as Java names it: 16 random bytes in lowercase hex.
func TestWireUnlockDoesNotWaitForTheLatchDelete(t *testing.T) {
	ctx, srv := serve(t)
	adm := admin(t, srv)
	gate := newDelGate()
	defer gate.open()
	rdb := srv.Admin()
	rdb.AddHook(gate)
	c, err := New(rdb, WithRedissonWire("go-1"))
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	warm, err := newWireClient(t, srv, "warm").Lock(ctx, "w") // loads the scripts: no EVALSHA-then-EVAL below
	require.NoError(t, err)
	require.NoError(t, warm.Unlock(ctx))
	l, err := c.Lock(ctx, "n")
	require.NoError(t, err)
	unlocked := make(chan error, 1)
	go func() { unlocked <- l.Unlock(ctx) }()
	require.NoError(t, within(t, unlocked, "Unlock, with the latch's DEL held back"))

	var scripts int
	var latch string
	for _, cmd := range gate.commands() {
		switch cmd[0] {
		case "evalsha", "eval":
			scripts++
			if cmd[2] == "3" { // the unlock script: lock, channel, latch
				latch = cmd[5]
			}
		}
	}
	require.Equal(t, 2, scripts, "Lock+Unlock sent %v", gate.commands())
	require.Regexp(t, "^"+regexp.QuoteMeta("redisson_unlock_latch:{n}:")+"[0-9a-f]{32}$", latch)
	require.EqualValues(t, 1, adm.Exists(ctx, latch).Val(), "the latch, until its DEL goes through")
	gate.open()
	require.Eventually(t, func() bool { return adm.Exists(ctx, latch).Val() == 0 }, 5*time.Second, 10*time.Millisecond)
}

// Locks N and {N} share one channel in Redisson's naming. A waiter for N
// queued behind a waiter for {N} in one client wakes on N's unlock, though
// {N} stays held: each lock has its own line on the shared channel.
func TestWireSharedChannelWakesEveryLock(t *testing.T) {
	ctx, srv := serve(t)
	adm := admin(t, srv)
	j := newJavaClient(t, adm)
	require.Equal(t, javaChannel("N"), javaChannel("{N}"))
	c := newWireClient(t, srv, "go-1")
	for _, name := range []string{"{N}", "N"} {
		ok, _ := j.tryAcquire(ctx, name, 1, time.Minute)
		require.True(t, ok)
	}
	braced := lockInBackground(ctx, c, "{N}")
	awaitSubscribers(t, adm, javaChannel("N"), 1)
	plain := lockInBackground(ctx, c, "N")
	require.Eventually(t, func() bool { // the N waiter has queued
		c.wire.lines.mu.Lock()
		defer c.wire.lines.mu.Unlock()
		n := 0
		for _, l := range c.wire.lines.lines {
			n += len(l.queue)
		}
		return n == 2
	}, 10*time.Second, time.Millisecond)
	require.EqualValues(t, 1, j.unlock(ctx, "N", 1, time.Minute, "u1"))
	l := receive(t, plain)
	require.NoError(t, l.Unlock(ctx))
	require.EqualValues(t, 1, j.unlock(ctx, "{N}", 1, time.Minute, "u2"))
	require.NoError(t, receive(t, braced).Unlock(ctx))
}
