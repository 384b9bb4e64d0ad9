package bench

import (
	"cmp"
	"context"
	"math"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/bench/redistest/redisproc"
)

// percentile returns the p-th percentile (0 < p ≤ 100) of sorted by the
// nearest-rank method: the smallest sample that at least p% of the samples
// do not exceed. It returns 0 for no samples.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// distribution is the p50, p99 and max of samples, which it sorts.
type distribution struct{ P50, P99, Max time.Duration }

func distributionOf(samples []time.Duration) distribution {
	slices.Sort(samples)
	if len(samples) == 0 {
		return distribution{}
	}
	return distribution{percentile(samples, 50), percentile(samples, 99), samples[len(samples)-1]}
}

// median is the lower middle of values: for an odd count the median, for an
// even one the smaller of the two middle values, so that it is always a
// value some round measured. It returns the zero value for no values.
func median[T cmp.Ordered](values []T) T {
	if len(values) == 0 {
		var zero T
		return zero
	}
	s := slices.Sorted(slices.Values(values))
	return s[(len(s)-1)/2]
}

// fairness is the fewest and the most acquisitions any worker made, and
// their ratio: 1 when every worker got its turn equally, 0 when one starved.
func fairness(perWorker []int64) (least, most int64, ratio float64) {
	if len(perWorker) == 0 {
		return 0, 0, 0
	}
	least, most = slices.Min(perWorker), slices.Max(perWorker)
	if most > 0 {
		ratio = float64(least) / float64(most)
	}
	return least, most, ratio
}

// processCPU is the user+system CPU time this process has used so far.
func processCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// perAcquisition divides a count by the acquisitions it paid for.
func perAcquisition(n, acquisitions int64) float64 {
	if acquisitions == 0 {
		return 0
	}
	return float64(n) / float64(acquisitions)
}

// ratio is n/d, or n/a (nil) when d is not positive.
func ratio(n, d float64) *float64 {
	if d <= 0 {
		return nil
	}
	v := n / d
	return &v
}

// serverCommands is what the locks cost the server between two INFO
// commandstats snapshots: the measurement's own traffic (the INFO call that
// took before, and the pinger's PINGs, with their share of PING's time) is
// taken out. Commands that scripts run count once each, as the server
// executes them.
func serverCommands(before, after redisproc.Commands, pings int64) redisproc.Commands {
	d := after.Sub(before)
	delete(d.Calls, "info")
	delete(d.Usec, "info")
	if calls := d.Calls["ping"]; calls > 0 {
		mine := min(pings, calls)
		d.Usec["ping"] -= d.Usec["ping"] * mine / calls
		d.Calls["ping"] -= mine
	}
	if d.Calls["ping"] <= 0 {
		delete(d.Calls, "ping")
		delete(d.Usec, "ping")
	}
	return d
}

// readAllCommands is readCommands summed over servers.
func readAllCommands(ctx context.Context, servers []redis.UniversalClient) (redisproc.Commands, error) {
	sum := redisproc.Commands{Calls: redisproc.CommandStats{}, Usec: redisproc.CommandStats{}}
	for _, rdb := range servers {
		c, err := readCommands(ctx, rdb)
		if err != nil {
			return sum, err
		}
		addCommands(&sum, c)
	}
	return sum, nil
}

// readCommands reads INFO commandstats from rdb, summed over the masters of
// a cluster, since each node counts only what it ran.
func readCommands(ctx context.Context, rdb redis.UniversalClient) (redisproc.Commands, error) {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return redisproc.ReadCommands(ctx, rdb)
	}
	var mu sync.Mutex
	sum := redisproc.Commands{Calls: redisproc.CommandStats{}, Usec: redisproc.CommandStats{}}
	err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		c, err := redisproc.ReadCommands(ctx, node)
		mu.Lock()
		defer mu.Unlock()
		addCommands(&sum, c)
		return err
	})
	return sum, err
}

// addCommands adds c's calls and times to sum's.
func addCommands(sum *redisproc.Commands, c redisproc.Commands) {
	for k, v := range c.Calls {
		sum.Calls[k] += v
	}
	for k, v := range c.Usec {
		sum.Usec[k] += v
	}
}
