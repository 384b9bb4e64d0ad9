package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest/redisproc"
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

func TestServerCommandsLeaveOutTheMeasurement(t *testing.T) {
	before, err := redisproc.ParseCommands("# Commandstats\r\n" +
		"cmdstat_evalsha:calls=100,usec=1000,usec_per_call=10\r\n" +
		"cmdstat_hincrby:calls=50,usec=50,usec_per_call=1\r\n" +
		"cmdstat_ping:calls=3,usec=3,usec_per_call=1\r\n")
	require.NoError(t, err)
	after, err := redisproc.ParseCommands("# Commandstats\r\n" +
		"cmdstat_evalsha:calls=120,usec=1200,usec_per_call=10\r\n" +
		"cmdstat_hincrby:calls=60,usec=60,usec_per_call=1\r\n" +
		"cmdstat_publish:calls=10,usec=30,usec_per_call=3\r\n" +
		"cmdstat_ping:calls=9,usec=15,usec_per_call=1.67\r\n" +
		"cmdstat_info:calls=4,usec=400,usec_per_call=100\r\n")
	require.NoError(t, err)

	// 5 of the 6 new PINGs, and their share of PING's 12µs, were the
	// pinger's; INFO is the measurement's own.
	d := serverCommands(before, after, 5)
	require.Equal(t, redisproc.CommandStats{"evalsha": 20, "hincrby": 10, "publish": 10, "ping": 1}, d.Calls)
	require.Equal(t, redisproc.CommandStats{"evalsha": 200, "hincrby": 10, "publish": 30, "ping": 2}, d.Usec)
	require.InDelta(t, 4.1, perAcquisition(d.Calls.Total(), 10), 1e-12)

	d = serverCommands(before, after, 6)
	require.NotContains(t, d.Calls, "ping", "no PING left once the pinger's are taken out")
	require.NotContains(t, d.Usec, "ping")
	require.Zero(t, perAcquisition(41, 0), "no acquisitions, no ratio")
	require.Nil(t, ratio(41, 0), "n/a, not 0")
}

func TestMedianIsAMeasuredValue(t *testing.T) {
	require.Equal(t, 3, median([]int{5, 1, 3}))
	require.Equal(t, 2, median([]int{4, 1, 2, 3}), "the lower middle of an even count")
	require.Equal(t, 0.0, median[float64](nil))
}

func TestCombineRounds(t *testing.T) {
	rounds := []Result{
		{Algorithm: "a", Scenario: "s", Rounds: 1, Elapsed: time.Second, Acquisitions: 100, AcqPerSec: 100, WaitP99: 30,
			Fairness: 0.5, MinPerWorker: 5, MaxPerWorker: 10, Violations: 1, ServerCommands: map[string]int64{"get": 2}},
		{Algorithm: "a", Scenario: "s", Rounds: 1, Elapsed: time.Second, Acquisitions: 300, AcqPerSec: 300, WaitP99: 10,
			Fairness: 0.9, MinPerWorker: 9, MaxPerWorker: 10, GapP50: ptr(time.Duration(7)), ServerPerAcq: ptr(4.0)},
		{Algorithm: "a", Scenario: "s", Rounds: 1, Elapsed: time.Second, Acquisitions: 200, AcqPerSec: 200, WaitP99: 20,
			Fairness: 0.6, MinPerWorker: 3, MaxPerWorker: 5, GapP50: ptr(time.Duration(9)), ServerPerAcq: ptr(6.0)},
	}
	r := combine(rounds)
	require.Equal(t, 3, r.Rounds)
	require.Equal(t, 3*time.Second, r.Elapsed)
	require.EqualValues(t, 600, r.Acquisitions, "counts add up")
	require.EqualValues(t, 1, r.Violations, "a violation in any round shows")
	require.Equal(t, [3]float64{200, 100, 300}, [3]float64{r.AcqPerSec, r.AcqPerSecMin, r.AcqPerSecMax})
	require.Equal(t, time.Duration(20), r.WaitP99)
	require.Equal(t, time.Duration(7), *r.GapP50, "median of the rounds that measured it")
	require.Equal(t, 4.0, *r.ServerPerAcq)
	require.Nil(t, r.GapPerPing, "no round measured it")
	require.Equal(t, [3]float64{0.6, 3, 5}, [3]float64{r.Fairness, float64(r.MinPerWorker), float64(r.MaxPerWorker)},
		"fairness with its round's worker counts")
	require.Equal(t, map[string]int64{"get": 2}, r.ServerCommands)
}
