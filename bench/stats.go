package bench

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/reentrant/redistest/redisproc"
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

// perAcquisition divides a count by the acquisitions it paid for.
func perAcquisition(n, acquisitions int64) float64 {
	if acquisitions == 0 {
		return 0
	}
	return float64(n) / float64(acquisitions)
}

// serverCommands is what the locks cost the server between two INFO
// commandstats snapshots: the measurement's own traffic (the INFO call that
// took before, and the pinger's PINGs) is taken out. Commands that scripts
// run count once each, as the server executes them.
func serverCommands(before, after redisproc.CommandStats, pings int64) redisproc.CommandStats {
	d := after.Sub(before)
	delete(d, "info")
	if d["ping"] -= pings; d["ping"] <= 0 {
		delete(d, "ping")
	}
	return d
}

// readCommandStats reads INFO commandstats from rdb, summed over the masters
// of a cluster, since each node counts only what it ran.
func readCommandStats(ctx context.Context, rdb redis.UniversalClient) (redisproc.CommandStats, error) {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		c, err := redisproc.ReadCommands(ctx, rdb)
		return c.Calls, err
	}
	var mu sync.Mutex
	sum := redisproc.CommandStats{}
	err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		s, err := redisproc.ReadCommands(ctx, node)
		mu.Lock()
		defer mu.Unlock()
		for k, v := range s.Calls {
			sum[k] += v
		}
		return err
	})
	return sum, err
}
