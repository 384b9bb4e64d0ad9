package rlock

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// shortLease keeps watchdog tests quick: the watchdog ticks every 200ms.
const shortLease = 600 * time.Millisecond

// The watchdog keeps a hold past its lease: its key never expires. Each
// tick renews it, which the stats count; how close to its expiry a
// renewal lands is up to the load (see steadyLease), so it is logged only.
func TestWatchdogKeepsLockAlivePastItsLease(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	c := newClient(t, srv, WithWatchdogLease(steadyLease))
	l, err := c.Lock(ctx, "alive")
	require.NoError(t, err)

	minTTL := steadyLease
	for end := time.Now().Add(5 * steadyLease); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		ttl, err := rdb.PTTL(ctx, lockKey("alive")).Result()
		require.NoError(t, err)
		require.Positive(t, ttl, "the lock expired while held")
		minTTL = min(minTTL, ttl)
	}
	t.Logf("lowest PTTL over 5 leases: %v (lease %v)", minTTL, steadyLease)
	require.NoError(t, l.Context().Err())
	require.NoError(t, l.Unlock(ctx))
	require.Zero(t, c.wd.Len(), "unlock stops renewal")
	st := c.RenewalStats()
	require.GreaterOrEqual(t, st.Renewed, uint64(10), "renewed every tick or so: %+v", st)
	require.Zero(t, st.Lost)
}

func TestAdminDeleteSignalsLoss(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	var lostName string
	var logs bytes.Buffer
	var mu sync.Mutex
	c := newClient(t, srv, WithWatchdogLease(shortLease),
		WithLostHandler(func(name string, cause error) { mu.Lock(); lostName = name; mu.Unlock() }),
		WithLogger(slog.New(slog.NewTextHandler(&syncWriter{w: &logs, mu: &mu}, nil))))
	l, err := c.Lock(ctx, "deleted")
	require.NoError(t, err)

	require.NoError(t, rdb.Del(ctx, lockKey("deleted")).Err())
	start := time.Now()
	select {
	case <-l.Context().Done():
		t.Logf("loss signalled %v after the DEL (tick %v)", time.Since(start), shortLease/3)
	case <-time.After(shortLease):
		t.Fatal("no loss signal within a lease of the DEL")
	}
	require.ErrorIs(t, context.Cause(l.Context()), ErrLockLost)
	require.EqualError(t, context.Cause(l.Context()), `rlock: lock "deleted" lost: renewal found it not held`,
		"the lock named once, what happened said once")
	require.ErrorIs(t, l.Unlock(ctx), ErrLockLost)
	// The handler and the log run right after the contexts end.
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return lostName == "deleted" && strings.Contains(logs.String(), "lock=deleted")
	}, time.Second, time.Millisecond)
}

type syncWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func TestRedisRestartSignalsLoss(t *testing.T) {
	ctx, srv := serve(t)
	c := newClient(t, srv, WithWatchdogLease(shortLease))
	l, err := c.Lock(ctx, "restart")
	require.NoError(t, err)
	srv.Restart() // no persistence: the lock is gone
	select {
	case <-l.Context().Done():
	case <-time.After(3 * shortLease):
		t.Fatal("no loss signal after the restart")
	}
	require.ErrorIs(t, context.Cause(l.Context()), ErrLockLost)
	require.ErrorIs(t, l.Unlock(ctx), ErrLockLost)

	l2, err := c.Lock(ctx, "restart")
	require.NoError(t, err, "the client works after the restart")
	require.NoError(t, l2.Unlock(ctx))
}

// Renewal must never outlive the hold: after a storm of Lock, Unlock and
// cancelled waits, no key is left and no renewal is sent.
func TestNoZombieRenewalAfterStorm(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	clients := []*Client{
		newClient(t, srv, WithWatchdogLease(shortLease)),
		newClient(t, srv, WithWatchdogLease(shortLease)),
	}
	const cycles, workers = 1000, 16
	names := []string{"s0", "s1", "s2", "s3"}
	var wg sync.WaitGroup
	var acquired, gaveUp atomic.Int64
	work := make(chan int, cycles)
	for i := 0; i < cycles; i++ {
		work <- i
	}
	close(work)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				c := clients[i%len(clients)]
				// Up to 10ms: some calls hold, the rest give up at every step of a
				// wait, even where a raced, loaded Lock takes several ms.
				lctx, cancel := context.WithTimeout(ctx, time.Duration(rand.IntN(10000))*time.Microsecond)
				l, err := c.Lock(lctx, names[i%len(names)])
				if err != nil {
					gaveUp.Add(1)
				} else {
					acquired.Add(1)
					if i%3 == 0 { // re-enter (l.Context() may have timed out already), then unlock both
						if in, err := c.Lock(WithOwner(ctx, l.Owner()), l.Name()); assertNoError(t, err) {
							assertNoError(t, in.Unlock(ctx))
						}
					}
					assertNoError(t, l.Unlock(ctx))
				}
				cancel()
			}
		}()
	}
	wg.Wait()
	t.Logf("storm: %d acquired, %d gave up on a cancelled ctx", acquired.Load(), gaveUp.Load())
	require.Positive(t, acquired.Load())
	require.Positive(t, gaveUp.Load())
	for _, c := range clients {
		require.Zero(t, c.wd.Len(), "leases still watched after the storm")
	}
	// Give-backs of cancelled acquires (and passed-on grants) run in the
	// background for up to a second each, and are script calls too: the
	// storm is over once a whole lease goes by without one. A zombie
	// renewal, every lease/3, never lets it end, and fails the check below.
	scripts := func() int64 {
		s, err := redistest.ReadCommandStats(ctx, rdb)
		require.NoError(t, err)
		return s["evalsha"] + s["eval"]
	}
	for last, quiet := scripts(), time.Now().Add(5*time.Second); time.Now().Before(quiet); {
		time.Sleep(shortLease)
		now := scripts()
		if now == last {
			break
		}
		last = now
	}
	before, err := redistest.ReadCommandStats(ctx, rdb)
	require.NoError(t, err)
	time.Sleep(3 * shortLease)
	after, err := redistest.ReadCommandStats(ctx, rdb)
	require.NoError(t, err)
	d := after.Sub(before)
	require.Zero(t, d["evalsha"]+d["eval"], "renewals after the storm: %v", d)
	for _, n := range names {
		require.Zero(t, rdb.Exists(ctx, lockKey(n)).Val(), "lock %s left behind", n)
	}
}

func TestHeldLocksAddNoGoroutines(t *testing.T) {
	ctx, srv := serve(t)
	c := newClient(t, srv, WithWatchdogLease(steadyLease))
	warm, err := c.Lock(ctx, "warm")
	require.NoError(t, err)
	require.NoError(t, warm.Unlock(ctx))
	base := runtime.NumGoroutine()
	var held []*Lock
	for i := 0; i < 1000; i++ {
		l, err := c.Lock(ctx, fmt.Sprintf("g%d", i))
		require.NoError(t, err)
		held = append(held, l)
	}
	time.Sleep(steadyLease) // a few renewal rounds
	grown := runtime.NumGoroutine() - base
	t.Logf("goroutines: %d before, +%d with 1,000 held locks", base, grown)
	if grown >= 10 {
		var b strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
		t.Log(b.String())
	}
	require.Less(t, grown, 10, "goroutines per held lock")
	for _, l := range held {
		require.NoError(t, l.Unlock(ctx))
	}
	require.True(t, strings.HasPrefix(held[0].Owner(), c.id))
}
