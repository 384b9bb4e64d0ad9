package bench

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestTargetsJudgeBatonAgainstTheBestBaseline(t *testing.T) {
	checks := Targets(sampleResults())
	got := map[string]string{}
	for _, c := range checks {
		got[c.Target] = c.Status
	}
	require.Equal(t, map[string]string{
		"hot-key: wait p99 ≤ 1/3 of the best baseline's":      "PASS", // 9ms ≤ 40ms/3
		"hot-key: fairness min/max ≥ 0.7":                     "PASS", // 0.875
		"hot-key: acq/s ≥ the best baseline's":                "PASS", // 1000 ≥ 800
		"hot-key: hand-off gap p50 ≤ 3× PING p50":             "PASS", // exactly 3
		"uncontended: acq/s ≥ the best baseline's":            "MISS", // 20000 < 25000
		"uncontended: one round trip per Lock and per Unlock": "PASS", // 2 commands
	}, got)

	var buf bytes.Buffer
	require.NoError(t, WriteTargets(&buf, checks))
	require.Contains(t, buf.String(), "baton 20000, poll-1ms 25000")
}

func TestTargetsPickTheBestBaselinePerFigure(t *testing.T) {
	results := []Result{
		{Algorithm: BatonName, Scenario: "hot-key", WaitP99: 10 * time.Millisecond, AcqPerSec: 500},
		{Algorithm: "fast-but-unfair", Scenario: "hot-key", WaitP99: 90 * time.Millisecond, AcqPerSec: 700},
		{Algorithm: "slow-but-short-tail", Scenario: "hot-key", WaitP99: 20 * time.Millisecond, AcqPerSec: 300},
	}
	checks := Targets(results)
	require.Equal(t, "MISS", checks[0].Status, "10ms > 20ms/3: judged against the shortest tail")
	require.Contains(t, checks[0].Detail, "slow-but-short-tail")
	require.Equal(t, "MISS", checks[2].Status, "500 < 700: judged against the highest throughput")
	require.Contains(t, checks[2].Detail, "fast-but-unfair")
	require.Equal(t, "MISS", checks[3].Status, "no hand-offs measured is no pass")
	require.Equal(t, "SKIP", checks[4].Status, "no uncontended results")
}
