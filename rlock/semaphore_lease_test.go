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

	"github.com/batonlock/baton/notify/slot"
)

// scriptSpy is a go-redis hook that records the script calls a client
// sends: each call's keys and arguments, and each pipeline's calls.
type scriptSpy struct {
	mu        sync.Mutex // guards calls, pipelines and done
	calls     [][]any
	pipelines [][][]any
	done      int // pipelines answered
}

// started is how many pipelines the spy saw sent.
func (s *scriptSpy) started() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pipelines)
}

// finished is how many pipelines the spy saw answered.
func (s *scriptSpy) finished() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
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
		err := next(ctx, cmds)
		s.mu.Lock()
		s.done++
		s.mu.Unlock()
		return err
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

// Renewal (issue 25, property 6): a permit taken without WithLease is
// renewed by the watchdog while its process lives, for more than ten
// leases, batched with the client's locks: each watchdog round is one
// pipeline with one renewal script per slot. A lock, an RW read and a
// permit of one name share its slot, so one script renews the three; a
// lock of another name is the round's second script. The server counts
// the scripts too (commandstats), between rounds.
func TestSemaphoreWatchdogRenewsPermitsWithLocks(t *testing.T) {
	ctx, srv := serve(t)
	const lease = 300 * time.Millisecond
	c, spy := spiedClient(t, srv.Client(), WithWatchdogLease(lease))
	const name, other = "batched", "batched-other"
	require.NotEqual(t, slot.Of(name), slot.Of(other))
	l, err := c.Lock(ctx, name)
	require.NoError(t, err)
	r, err := c.RWLock(name).RLock(ctx)
	require.NoError(t, err)
	sem := c.Semaphore(name, 2)
	p, err := sem.Acquire(ctx, 1)
	require.NoError(t, err)
	o, err := c.Lock(ctx, other)
	require.NoError(t, err)

	// Holds taken a few ms apart may fall in different first rounds.
	time.Sleep(lease)
	first := spy.started()
	calls0, rounds0 := scriptCallsBetweenRounds(t, srv.Client(), spy)
	time.Sleep(10 * lease)
	calls1, rounds1 := scriptCallsBetweenRounds(t, srv.Client(), spy)
	require.GreaterOrEqual(t, rounds1-rounds0, 20, "renewed more than once a lease")
	require.Equal(t, 2*(rounds1-rounds0), calls1-calls0, "the server ran two scripts a round")

	for _, h := range []context.Context{l.Context(), r.Context(), p.Context(), o.Context()} {
		require.NoError(t, h.Err(), "a hold was lost while renewed")
	}
	st := inspect(t, sem)
	require.Positive(t, st.Holders[p.Owner()].TTL)
	require.NoError(t, p.Release(ctx))
	require.NoError(t, r.Unlock(ctx))
	require.NoError(t, l.Unlock(ctx))
	require.NoError(t, o.Unlock(ctx))

	spy.mu.Lock()
	defer spy.mu.Unlock()
	for i, pipe := range spy.pipelines[first:rounds1] {
		require.Len(t, pipe, 2, "round %d: one script per slot", first+i)
		holds := map[int]int{} // the slot of each script's keys → the holds it renews
		for _, args := range pipe {
			holds[slot.Of(args[3].(string))] += args[2].(int) / 2 // two keys a hold
		}
		require.Equal(t, map[int]int{slot.Of(name): 3, slot.Of(other): 1}, holds,
			"round %d: one script per slot, renewing every hold of it", first+i)
	}
	requireOnlyFence(t, admin(t, srv), name)
}

// scriptCallsBetweenRounds is how many scripts the server has run
// (commandstats), read between two watchdog rounds, and how many rounds
// (pipelines) spy saw started by then.
func scriptCallsBetweenRounds(t *testing.T, rdb *redis.Client, spy *scriptSpy) (calls, rounds int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		before := spy.started()
		n := commandCalls(t, rdb)
		if after := spy.started(); after == before && spy.finished() == after {
			return int(n["evalsha"] + n["eval"]), after
		}
	}
	t.Fatal("no moment between two watchdog rounds in 5 s")
	return 0, 0
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
	// The watchdog's lease only has to bring a renewal round in the test's
	// life; shortLease's leaves a renewal ~290 ms to be answered (sent by
	// half the lease, valid until the lease less 8 ms), where 150 ms left
	// ~70 ms, which a loaded -race run overran.
	c, spy := spiedClient(t, srv.Client(), WithWatchdogLease(shortLease))
	other := newClient(t, srv)
	sem := c.Semaphore("clock", 2)
	p, err := sem.Acquire(ctx, 2)
	require.NoError(t, err)
	waiting := acquireInBackground(ctx, sem, 1)
	waitForSemQueued(t, srv, "clock", 1) // first in the queue: SetMax grants it
	fixed := acquireInBackground(ctx, other.Semaphore("clock", 2), 1)
	waitForSemQueued(t, srv, "clock", 2)
	// A renewal round (the only pipeline in baton's format), whose scripts
	// are checked too.
	require.Eventually(t, func() bool { return spy.finished() > 0 }, fast, time.Millisecond)
	require.NoError(t, sem.SetSize(ctx, 3))
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

// A size SetSize stored outlives the permits held under it: SetSize keeps it
// for two watchdog leases, and each renewal of a permit for two more, so a
// handle made with a larger size, long after SetSize, is still held to it.
// (A size that expired under the permits would be stored again from that
// handle, and admit 10.)
func TestSemaphoreSetSizeOutlivesItsPermits(t *testing.T) {
	ctx, srv := serve(t)
	const lease = 300 * time.Millisecond
	sem := newClient(t, srv, WithWatchdogLease(lease)).Semaphore("sized", 10)
	require.NoError(t, sem.SetSize(ctx, 2))
	held, err := sem.Acquire(ctx, 2)
	require.NoError(t, err)
	time.Sleep(4 * lease) // past SetSize's two leases and the grant's
	require.NoError(t, held.Context().Err(), "renewed by the watchdog")

	big := newClient(t, srv).Semaphore("sized", 10)
	_, err = big.TryAcquire(ctx, 1)
	require.ErrorIs(t, err, ErrNotObtained, "2 of 2 held")
	require.EqualValues(t, 2, inspect(t, big).Size)
	require.NoError(t, held.Release(ctx))
	_, err = big.TryAcquire(ctx, 3)
	require.ErrorIs(t, err, ErrInvalidOption, "3 of the stored 2")
	p, err := big.TryAcquire(ctx, 2)
	require.NoError(t, err)
	require.NoError(t, p.Release(ctx))
	requireOnlyFence(t, admin(t, srv), "sized")
}
