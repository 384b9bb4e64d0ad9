package reentrant

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// costOwner marks the owners of the calls a cost case measures: the
// server times of the script runs whose owner argument starts with it are
// the case's, those of its preparation are not.
const costOwner = "M-"

// costEnv is a server, a read-write lock on it, and a client subscribed
// to the lock's grant channel, on which every waiter of a cost case waits.
type costEnv struct {
	ctx   context.Context
	rdb   *redis.Client
	k     SharedKeys
	read  SharedMode
	write SharedMode
	c     *client
	n     int // names new owners and waiters
}

// reset deletes the lock's holds and queue: a fresh start for a case's
// next run.
func (e *costEnv) reset(t testing.TB) {
	require.NoError(t, e.rdb.Del(e.ctx, e.k.Hash, e.k.Leases, e.k.Queue).Err())
}

// owner is a new owner, marked as measured when measured.
func (e *costEnv) owner(measured bool) string {
	e.n++
	if measured {
		return fmt.Sprint(costOwner, e.n)
	}
	return fmt.Sprint("o", e.n)
}

// take makes a new owner hold s, and returns the owner and its token.
func (e *costEnv) take(t testing.TB, s SharedMode, measured bool) (string, uint64) {
	o := e.owner(measured)
	r, err := s.AcquireNew(e.ctx, e.rdb, o, testLease, e.c.waiter(o))
	require.NoError(t, err)
	require.True(t, r.Acquired)
	return o, r.Token
}

// queue queues n new owners for s, each as a waiter of the client.
func (e *costEnv) queue(t testing.TB, s SharedMode, n int) {
	for range n {
		o := e.owner(false)
		r, err := s.AcquireNew(e.ctx, e.rdb, o, testLease, e.c.waiter(o))
		require.NoError(t, err)
		require.False(t, r.Acquired)
	}
}

// costCase is one call of one script in one state: prepare builds the
// state (after a reset) and returns the measured call.
type costCase struct {
	name    string
	script  *script
	prepare func(t testing.TB, e *costEnv) func()
}

func costCases() []costCase {
	var cases []costCase
	acquire := func(name string, prepare func(t testing.TB, e *costEnv) func()) {
		cases = append(cases, costCase{"acquire/" + name, sharedAcquireScript, prepare})
	}
	release := func(name string, prepare func(t testing.TB, e *costEnv) func()) {
		cases = append(cases, costCase{"release/" + name, sharedReleaseScript, prepare})
	}
	releaser := func(t testing.TB, e *costEnv, s SharedMode, o string, token uint64) func() {
		return func() {
			_, err := s.Release(e.ctx, e.rdb, o, token, e.owner(false))
			require.NoError(t, err)
		}
	}
	acquire("free", func(t testing.TB, e *costEnv) func() {
		return func() { e.take(t, e.read, true) }
	})
	acquire("re-entry", func(t testing.TB, e *costEnv) func() {
		o, _ := e.take(t, e.read, true)
		return func() {
			r, err := e.read.Acquire(e.ctx, e.rdb, o, e.owner(false), testLease, 0, Waiter{})
			require.NoError(t, err)
			require.True(t, r.Acquired)
		}
	})
	acquire("confirm", func(t testing.TB, e *costEnv) func() {
		// A waiter looks again after its grant's message: it confirms
		// the grant.
		w, token := e.take(t, e.write, false)
		o := e.owner(true)
		r, err := e.read.AcquireNew(e.ctx, e.rdb, o, testLease, e.c.waiter(o))
		require.NoError(t, err)
		require.False(t, r.Acquired)
		releaser(t, e, e.write, w, token)()
		return func() {
			r, err := e.read.AcquireNew(e.ctx, e.rdb, o, testLease, e.c.waiter(o))
			require.NoError(t, err)
			require.True(t, r.Acquired)
		}
	})
	for _, n := range []int{0, 8, 32} {
		acquire(fmt.Sprint("look-", n), func(t testing.TB, e *costEnv) func() {
			// A queued waiter looks again, n others queued before it.
			e.take(t, e.write, false)
			e.queue(t, e.read, n)
			o := e.owner(true)
			r, err := e.read.AcquireNew(e.ctx, e.rdb, o, testLease, e.c.waiter(o))
			require.NoError(t, err)
			require.False(t, r.Acquired)
			return func() {
				r, err := e.read.AcquireNew(e.ctx, e.rdb, o, testLease, e.c.waiter(o))
				require.NoError(t, err)
				require.False(t, r.Acquired)
			}
		})
		acquire(fmt.Sprint("queue-", n), func(t testing.TB, e *costEnv) func() {
			e.take(t, e.write, false)
			e.queue(t, e.read, n)
			return func() {
				o := e.owner(true)
				r, err := e.read.AcquireNew(e.ctx, e.rdb, o, testLease, e.c.waiter(o))
				require.NoError(t, err)
				require.False(t, r.Acquired)
			}
		})
		release(fmt.Sprint("no-grant-", n), func(t testing.TB, e *costEnv) func() {
			// Another read stays, and the write at the queue's head does
			// not fit.
			o, token := e.take(t, e.read, true)
			e.take(t, e.read, false)
			if n > 0 {
				e.queue(t, e.write, 1)
				e.queue(t, e.read, n-1)
			}
			return releaser(t, e, e.read, o, token)
		})
		release(fmt.Sprint("grant-write-", n), func(t testing.TB, e *costEnv) func() {
			// The last read leaves: the write at the head is granted.
			o, token := e.take(t, e.read, true)
			e.queue(t, e.write, 1)
			e.queue(t, e.read, n)
			return releaser(t, e, e.read, o, token)
		})
		if n > 0 {
			release(fmt.Sprint("grant-reads-", n), func(t testing.TB, e *costEnv) func() {
				// A write leaves: the n reads queued are granted, up to the
				// write behind them.
				o, token := e.take(t, e.write, true)
				e.queue(t, e.read, n)
				e.queue(t, e.write, 1)
				return releaser(t, e, e.write, o, token)
			})
		}
		cases = append(cases, costCase{fmt.Sprint("renew/holders-", n+1), renewScript,
			func(t testing.TB, e *costEnv) func() {
				o, token := e.take(t, e.read, true)
				for range n {
					e.take(t, e.read, false)
				}
				return func() {
					ok, err := e.read.Renew(e.ctx, e.rdb, o, token, testLease)
					require.NoError(t, err)
					require.True(t, ok)
				}
			}})
	}
	return cases
}

// serverTimes runs case c runs times, each from a fresh state, and returns
// the server time of each measured script run, read from SLOWLOG (which
// logs every command at a threshold of 0): that of the case's script runs
// with a measured owner, and no other.
func serverTimes(t testing.TB, e *costEnv, c costCase, runs int) []time.Duration {
	sha := c.script.Hash()
	var times []time.Duration
	for range runs {
		e.reset(t)
		call := c.prepare(t, e)
		require.NoError(t, e.rdb.SlowLogReset(e.ctx).Err())
		call()
		log, err := e.rdb.SlowLogGet(e.ctx, -1).Result()
		require.NoError(t, err)
		for _, l := range log {
			if len(l.Args) > 3 && strings.EqualFold(l.Args[0], "evalsha") && l.Args[1] == sha {
				var nkeys int
				_, _ = fmt.Sscan(l.Args[2], &nkeys)
				if strings.HasPrefix(l.Args[3+nkeys], costOwner) {
					times = append(times, l.Duration)
				}
			}
		}
	}
	return times
}

func newCostEnv(t testing.TB) *costEnv {
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client()
	admin := srv.Admin()
	require.NoError(t, admin.ConfigSet(ctx, "slowlog-log-slower-than", "0").Err())
	require.NoError(t, admin.ConfigSet(ctx, "slowlog-max-len", "1024").Err())
	k, err := Namespace{}.SharedKeys(KindRW, "cost")
	require.NoError(t, err)
	read, err := k.Read()
	require.NoError(t, err)
	write, err := k.Write()
	require.NoError(t, err)
	sub := rdb.Subscribe(ctx, k.GrantChannel("cost"))
	t.Cleanup(func() { _ = sub.Close() })
	_, err = sub.Receive(ctx)
	require.NoError(t, err)
	return &costEnv{ctx: ctx, rdb: admin, k: k, read: read, write: write, c: &client{name: "cost", sub: sub, k: k}}
}

// BenchmarkSharedScriptServerTime reports the server time of the
// shared resources' scripts' calls, case by case (see costCases), as the
// median µs a call ran in Redis (and the tenth percentile): what each call
// costs the server, whose one thread every client shares.
func BenchmarkSharedScriptServerTime(b *testing.B) {
	e := newCostEnv(b)
	for _, c := range costCases() {
		b.Run(c.name, func(b *testing.B) {
			var times []time.Duration
			for range b.N {
				times = append(times, serverTimes(b, e, c, 1)...)
			}
			require.Len(b, times, b.N)
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Nanoseconds())/1e3, "server-µs/call")
			// On a loaded machine a call is often preempted: the tenth
			// percentile is nearer what the script itself costs.
			b.ReportMetric(float64(times[len(times)/10].Nanoseconds())/1e3, "p10-server-µs/call")
		})
	}
}
