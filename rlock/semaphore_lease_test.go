package rlock

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// scriptSpy is a go-redis hook that records the script calls a client
// sends: each call's keys and arguments, and each pipeline's calls.
type scriptSpy struct {
	mu        sync.Mutex // guards calls and pipelines
	calls     [][]any
	pipelines [][][]any
}

func (s *scriptSpy) DialHook(next redis.DialHook) redis.DialHook { return next }

func (s *scriptSpy) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		s.record(cmd)
		return next(ctx, cmd)
	}
}

func (s *scriptSpy) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var scripts [][]any
		for _, cmd := range cmds {
			scripts = append(scripts, s.record(cmd)...)
		}
		s.mu.Lock()
		s.pipelines = append(s.pipelines, scripts)
		s.mu.Unlock()
		return next(ctx, cmds)
	}
}

// record keeps cmd's arguments if it is a script call, and returns them.
func (s *scriptSpy) record(cmd redis.Cmder) [][]any {
	if n := cmd.Name(); n != "evalsha" && n != "eval" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, cmd.Args())
	return [][]any{cmd.Args()}
}

// spiedClient is a Client whose Redis client records its script calls.
func spiedClient(t *testing.T, rdb *redis.Client, opts ...Option) (*Client, *scriptSpy) {
	t.Helper()
	spy := &scriptSpy{}
	rdb.AddHook(spy)
	c, err := New(rdb, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c, spy
}

// A permit taken without WithLease is renewed by the watchdog while its
// process lives, for more than ten leases, in the same pipeline as the
// client's lock: each watchdog round is one pipeline with one renewal
// script for each hold.
func TestSemaphoreWatchdogRenewsPermitsWithLocks(t *testing.T) {
	ctx, srv := serve(t)
	const lease = 300 * time.Millisecond
	c, spy := spiedClient(t, srv.Client(), WithWatchdogLease(lease))
	l, err := c.Lock(ctx, "batched-lock")
	require.NoError(t, err)
	sem := c.Semaphore("batched-sem", 2)
	p, err := sem.Acquire(ctx, 1)
	require.NoError(t, err)

	time.Sleep(11 * lease)
	require.NoError(t, p.Context().Err(), "the permit was lost while renewed")
	st := inspect(t, sem)
	require.Positive(t, st.Holders[p.Owner()].TTL)
	require.NoError(t, p.Release(ctx))
	require.NoError(t, l.Unlock(ctx))

	spy.mu.Lock()
	defer spy.mu.Unlock()
	both := 0
	for i, pipe := range spy.pipelines {
		var locks, permits int
		for _, args := range pipe {
			switch args[3] { // the first key
			case lockKey("batched-lock"):
				locks++
			case semKey("batched-sem"):
				permits++
			default:
				t.Fatalf("round %d renewed %v", i, args)
			}
		}
		require.LessOrEqual(t, locks, 1, "round %d: one renewal script per hold", i)
		require.LessOrEqual(t, permits, 1, "round %d: one renewal script per hold", i)
		if locks == 1 && permits == 1 {
			both++
		}
	}
	t.Logf("%d watchdog rounds, %d renewing both holds", len(spy.pipelines), both)
	require.GreaterOrEqual(t, both, 10, "renewed in the lock's rounds, more than once a lease")
	require.GreaterOrEqual(t, both, len(spy.pipelines)-2, "only the first rounds may renew one hold alone")
	requireOnlyFence(t, admin(t, srv), "batched-sem")
}

// Server clock (issue 25, property 7): a lease is counted by the scripts
// from Redis's TIME, so no argument a script receives may carry the
// client's wall clock; a client whose clock is off by 30 s then neither
// loses nor extends permits. libfaketime cannot move a Go process's clock
// (Go reads it through the vDSO, never libc's clock_gettime, even when
// linked with libc), so this test holds the seam instead: every script
// call of a semaphore's whole life, read as integers in s, ms and µs, lies
// nowhere near the client's clock, but for the tokens, which the server's
// clock made. reentrant's
// TestExpiredHoldIsPurgedByTheServerClock shows the purge goes by TIME.
func TestSemaphoreScriptsGetNoClientClock(t *testing.T) {
	ctx, srv := serve(t)
	c, spy := spiedClient(t, srv.Client(), WithWatchdogLease(150*time.Millisecond))
	other := newClient(t, srv)
	sem := c.Semaphore("clock", 2)
	p, err := sem.Acquire(ctx, 2)
	require.NoError(t, err)
	waiting := acquireInBackground(ctx, sem, 1)
	fixed := acquireInBackground(ctx, other.Semaphore("clock", 2), 1)
	waitForSemQueued(t, srv, "clock", 2)
	time.Sleep(200 * time.Millisecond) // a renewal round
	require.NoError(t, sem.SetMax(ctx, 3))
	q := receivePermit(t, waiting)
	_, err = sem.Inspect(ctx)
	require.NoError(t, err)
	require.NoError(t, p.Release(ctx))
	r := receivePermit(t, fixed)
	require.NoError(t, q.Release(ctx))
	require.NoError(t, r.Release(ctx))
	_, err = sem.ForceRelease(ctx)
	require.NoError(t, err)

	// Tokens are the server's clock in µs (or above): the only integers
	// near the clock a script may get.
	tokens := map[string]bool{}
	for _, h := range []*Permit{p, q, r} {
		tokens[strconv.FormatUint(h.Token(), 10)] = true
	}
	now := time.Now()
	near := func(v, unit int64) bool {
		d := time.Duration(v-now.UnixNano()/unit) * time.Duration(unit)
		return d > -24*time.Hour && d < 24*time.Hour
	}
	spy.mu.Lock()
	defer spy.mu.Unlock()
	require.NotEmpty(t, spy.calls)
	for _, args := range spy.calls {
		for _, a := range args {
			v, err := strconv.ParseInt(fmt.Sprint(a), 10, 64)
			if err != nil || tokens[fmt.Sprint(a)] {
				continue
			}
			for _, unit := range []int64{1e9, 1e6, 1e3} {
				require.False(t, near(v, unit), "a script got the client's clock (%d, unit %dns): %v", v, unit, args)
			}
		}
	}
	requireOnlyFence(t, admin(t, srv), "clock")
}
