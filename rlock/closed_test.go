package rlock

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestEveryCallAfterCloseIsErrClosed: every public call that would send to
// Redis refuses with ErrClosed once its Client is closed, and sends
// nothing: the look-ups (Inspect) as well as the calls that change state,
// in both formats.
func TestEveryCallAfterCloseIsErrClosed(t *testing.T) {
	ctx, srv := serve(t)
	c, wire := newClient(t, srv), newClient(t, srv, WithRedissonWire(""))
	rw, sem := c.RWLock("rw"), c.Semaphore("sem", 2)
	require.NoError(t, c.Close())
	require.NoError(t, wire.Close())

	noop := func(context.Context) error { return nil }
	calls := map[string]func() error{
		"Lock":                   func() error { _, err := c.Lock(ctx, "l"); return err },
		"TryLock":                func() error { _, err := c.TryLock(ctx, "l"); return err },
		"Do":                     func() error { return c.Do(ctx, "l", noop) },
		"ForceUnlock":            func() error { _, err := c.ForceUnlock(ctx, "l"); return err },
		"Inspect":                func() error { _, err := c.Inspect(ctx, "l"); return err },
		"wire Lock":              func() error { _, err := wire.Lock(ctx, "l"); return err },
		"wire ForceUnlock":       func() error { _, err := wire.ForceUnlock(ctx, "l"); return err },
		"wire Inspect":           func() error { _, err := wire.Inspect(ctx, "l"); return err },
		"RWLock.RLock":           func() error { _, err := rw.RLock(ctx); return err },
		"RWLock.Lock":            func() error { _, err := rw.Lock(ctx); return err },
		"RWLock.TryRLock":        func() error { _, err := rw.TryRLock(ctx); return err },
		"RWLock.TryLock":         func() error { _, err := rw.TryLock(ctx); return err },
		"RWLock.DoRead":          func() error { return rw.DoRead(ctx, noop) },
		"RWLock.Do":              func() error { return rw.Do(ctx, noop) },
		"RWLock.ForceUnlock":     func() error { _, err := rw.ForceUnlock(ctx); return err },
		"RWLock.Inspect":         func() error { _, err := rw.Inspect(ctx); return err },
		"Semaphore.Acquire":      func() error { _, err := sem.Acquire(ctx, 1); return err },
		"Semaphore.TryAcquire":   func() error { _, err := sem.TryAcquire(ctx, 1); return err },
		"Semaphore.SetSize":      func() error { return sem.SetSize(ctx, 3) },
		"Semaphore.ForceRelease": func() error { _, err := sem.ForceRelease(ctx); return err },
		"Semaphore.Inspect":      func() error { _, err := sem.Inspect(ctx); return err },
	}
	rdb := admin(t, srv)
	before := commandStats(ctx, rdb)
	for name, call := range calls {
		require.ErrorIs(t, call(), ErrClosed, name)
	}
	require.Equal(t, before, commandStats(ctx, rdb), "a closed client sends nothing")
}

// commandStats is the server's count of every command run, but INFO, which
// reads it.
func commandStats(ctx context.Context, rdb *redis.Client) []string {
	var out []string
	for _, line := range strings.Split(rdb.Info(ctx, "commandstats").Val(), "\n") {
		if strings.HasPrefix(line, "cmdstat_") && !strings.HasPrefix(line, "cmdstat_info:") {
			out = append(out, line)
		}
	}
	return out
}
