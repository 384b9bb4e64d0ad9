package bench

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/bench/redistest"
)

// shardsRunFor is how long each side of BenchmarkManyKeysShards runs.
const shardsRunFor = 5 * time.Second

// BenchmarkManyKeysShards runs baton's many-keys scenario on one redis-server
// and on a 3-master cluster, in the same run, and reports the acquisitions
// per second of each and their ratio. On a machine with fewer cores than
// servers plus clients, the ratio shows the cost of sharing cores rather
// than what three shards add.
func BenchmarkManyKeysShards(b *testing.B) {
	single := redistest.Start(b)
	cluster := redistest.StartCluster(b, 3)
	manyKeys := named(b, Scenarios(shardsRunFor), "many-keys", func(s Scenario) string { return s.Name })
	baton := named(b, Algorithms(), BatonName, func(a Algorithm) string { return a.Name })
	targets := []Target{
		{NewClient: func() redis.UniversalClient { return single.Admin() }}, // bench:* keys and INFO, not the ACL test user's
		{NewClient: func() redis.UniversalClient { return cluster.ClusterClient() }},
	}
	var acqPerSec [2]float64
	for b.Loop() {
		for i, target := range targets {
			suite := Suite{Target: target, Algorithms: []Algorithm{baton}, Scenarios: []Scenario{manyKeys}}
			rep, err := suite.Run(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			if v := rep.Results[0].Violations; v != 0 {
				b.Fatalf("%d mutual-exclusion violations", v)
			}
			acqPerSec[i] = rep.Results[0].AcqPerSec
		}
	}
	b.ReportMetric(acqPerSec[0], "acq/s-1node")
	b.ReportMetric(acqPerSec[1], "acq/s-3shards")
	b.ReportMetric(acqPerSec[1]/acqPerSec[0], "ratio")
}

// named picks the item called name.
func named[T any](b *testing.B, items []T, name string, nameOf func(T) string) T {
	b.Helper()
	for _, it := range items {
		if nameOf(it) == name {
			return it
		}
	}
	b.Fatalf("no %q", name)
	var zero T
	return zero
}
