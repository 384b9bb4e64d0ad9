package bench

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/rlock"
)

// renewalLocks is how many locks one client holds in BenchmarkRenewal.
const renewalLocks = 10_000

// renewalLease gives a 300ms tick: long enough for 10,000 renewals on a
// 2-core machine, short enough for a quick benchmark.
const renewalLease = 900 * time.Millisecond

// BenchmarkRenewal holds 10,000 locks on one client and measures, per
// watchdog tick, the round trips (pipelines sent), the leases renewed and
// the client's CPU time. One op is one tick. With the default batch of
// 1,000 the round trips per tick should be 10, not 10,000.
func BenchmarkRenewal(b *testing.B) {
	srv := redistest.Start(b)
	rdb := srv.Admin()
	pipelines := redistest.CountPipelines(rdb)
	c, err := rlock.New(rdb, rlock.WithWatchdogLease(renewalLease))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	for i := range renewalLocks {
		if _, err := c.Lock(ctx, fmt.Sprint("renew-", i)); err != nil {
			b.Fatal(err)
		}
	}
	nextTick(b, c) // let every lease reach its first renewal round

	pipelines.Take()
	startStats, startCPU := c.RenewalStats(), cpuTime()
	for b.Loop() {
		nextTick(b, c)
	}
	st := c.RenewalStats()
	ticks := float64(st.Ticks - startStats.Ticks)
	if st.Lost != 0 || st.Failed != startStats.Failed {
		b.Fatalf("renewal failed during the benchmark: %+v", st)
	}
	b.ReportMetric(float64(pipelines.Count())/ticks, "roundtrips/tick")
	b.ReportMetric(float64(st.Renewed-startStats.Renewed)/ticks, "renewed/tick")
	b.ReportMetric(float64((cpuTime()-startCPU).Microseconds())/ticks/1000, "cpu-ms/tick")
}

// nextTick waits until the watchdog has finished one more renewal round.
func nextTick(b *testing.B, c *rlock.Client) {
	start := c.RenewalStats()
	deadline := time.Now().Add(10 * renewalLease)
	for {
		st := c.RenewalStats()
		if st.Ticks > start.Ticks && st.Renewed+st.Failed >= start.Renewed+start.Failed+renewalLocks {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("no renewal round within %v: %+v", 10*renewalLease, st)
		}
		time.Sleep(time.Millisecond)
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
