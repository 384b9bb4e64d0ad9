package bench

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/bench/redistest"
)

// Benchmarks against a real redis-server; skipped under -short, failed when
// it is not installed.

// BenchmarkUncontended is one Lock and one Unlock of a free lock: the round
// trips plus the client's own cost and allocations.
func BenchmarkUncontended(b *testing.B) {
	srv := redistest.Start(b)
	for _, algo := range Algorithms() {
		b.Run(algo.Name, func(b *testing.B) {
			l := benchLocker(b, srv, algo)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := lockUnlock(ctx, l, "free"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHandoff ping-pongs one lock between two goroutines, each with its
// own client: the holder releases only once the other is waiting, so
// nearly every acquisition is a hand-off. It reports ns per hand-off.
func BenchmarkHandoff(b *testing.B) {
	srv := redistest.Start(b)
	for _, algo := range Algorithms() {
		b.Run(algo.Name, func(b *testing.B) {
			lockers := [2]Locker{benchLocker(b, srv, algo), benchLocker(b, srv, algo)}
			var waiting [2]atomic.Bool
			var acquisitions, handoffs atomic.Int64
			var last atomic.Int32
			last.Store(-1)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var wg sync.WaitGroup
			b.ResetTimer()
			for me := range int32(2) {
				other := 1 - me
				wg.Go(func() {
					for {
						waiting[me].Store(true)
						h, err := lockers[me].Lock(ctx, "pingpong")
						waiting[me].Store(false)
						if err != nil {
							if ctx.Err() == nil {
								b.Error(err)
							}
							return
						}
						if last.Swap(me) == other {
							handoffs.Add(1)
						}
						if acquisitions.Add(1) >= int64(b.N) {
							cancel()
						}
						// The other goroutine is between its own release and
						// its next Lock for a moment at most.
						for !waiting[other].Load() && ctx.Err() == nil {
							runtime.Gosched()
						}
						if err := h.Unlock(context.Background()); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			if n := handoffs.Load(); n > 0 {
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/handoff")
			}
		})
	}
}

// benchLocker opens a Locker, closed when b ends (not when the whole
// benchmark does: b's function may run several times), and takes and frees
// one lock so that dialling and loading scripts are not timed.
func benchLocker(b *testing.B, srv *redistest.Server, algo Algorithm) Locker {
	b.Helper()
	l := openLocker(b, srv, algo, "bench:"+b.Name()+":")
	if err := lockUnlock(context.Background(), l, "warm-up"); err != nil {
		b.Fatal(err)
	}
	return l
}

// openLocker opens a Locker on a client of its own, as one process would;
// both are closed when tb ends.
func openLocker(tb testing.TB, srv *redistest.Server, algo Algorithm, prefix string) Locker {
	tb.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	l, err := algo.New(Env{Client: rdb, Prefix: prefix})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = l.Close(); _ = rdb.Close() })
	return l
}
