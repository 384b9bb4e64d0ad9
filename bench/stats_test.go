package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/reentrant/redistest/redisproc"
)

func TestPercentileNearestRank(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i + 1) // 1..100
	}
	for _, tc := range []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"single", []time.Duration{7}, 99, 7},
		{"p50 of 1..100", hundred, 50, 50},
		{"p99 of 1..100", hundred, 99, 99},
		{"p100 of 1..100", hundred, 100, 100},
		{"p1 of 1..100", hundred, 1, 1},
		{"p50 of four", []time.Duration{10, 20, 30, 40}, 50, 20},
		{"p99 of four is the max", []time.Duration{10, 20, 30, 40}, 99, 40},
		{"tiny p is the min", []time.Duration{10, 20, 30, 40}, 0.001, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, percentile(tc.sorted, tc.p))
		})
	}
}

func TestDistributionSortsItsSamples(t *testing.T) {
	d := distributionOf([]time.Duration{5, 1, 4, 2, 3})
	require.Equal(t, distribution{P50: 3, P99: 5, Max: 5}, d)
	require.Equal(t, distribution{}, distributionOf(nil))
}

func TestFairness(t *testing.T) {
	least, most, ratio := fairness([]int64{30, 40, 20, 40})
	require.Equal(t, []int64{20, 40}, []int64{least, most})
	require.InDelta(t, 0.5, ratio, 1e-12)

	_, _, ratio = fairness([]int64{0, 12})
	require.Zero(t, ratio, "a starved worker makes the ratio 0")
	_, _, ratio = fairness([]int64{0, 0})
	require.Zero(t, ratio, "no acquisitions at all")
	_, _, ratio = fairness([]int64{9})
	require.Equal(t, 1.0, ratio)
}

func TestServerCommandsPerAcquisition(t *testing.T) {
	before, err := redisproc.ParseCommands("# Commandstats\r\n" +
		"cmdstat_evalsha:calls=100,usec=1,usec_per_call=0.01\r\n" +
		"cmdstat_hincrby:calls=50,usec=1,usec_per_call=0.02\r\n" +
		"cmdstat_ping:calls=3,usec=1,usec_per_call=0.3\r\n")
	require.NoError(t, err)
	after, err := redisproc.ParseCommands("# Commandstats\r\n" +
		"cmdstat_evalsha:calls=120,usec=1,usec_per_call=0.01\r\n" +
		"cmdstat_hincrby:calls=60,usec=1,usec_per_call=0.02\r\n" +
		"cmdstat_publish:calls=10,usec=1,usec_per_call=0.02\r\n" +
		"cmdstat_ping:calls=9,usec=1,usec_per_call=0.3\r\n" +
		"cmdstat_info:calls=4,usec=1,usec_per_call=9\r\n")
	require.NoError(t, err)

	// 5 of the 6 new PINGs were the pinger's; INFO is the measurement's own.
	d := serverCommands(before.Calls, after.Calls, 5)
	require.Equal(t, redisproc.CommandStats{"evalsha": 20, "hincrby": 10, "publish": 10, "ping": 1}, d)
	require.InDelta(t, 4.1, perAcquisition(d.Total(), 10), 1e-12)

	d = serverCommands(before.Calls, after.Calls, 6)
	require.NotContains(t, d, "ping", "no PING left once the pinger's are taken out")
	require.Zero(t, perAcquisition(41, 0), "no acquisitions, no ratio")
}
