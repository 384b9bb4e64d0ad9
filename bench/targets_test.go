package bench

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func statuses(checks []Check) map[string]string {
	got := map[string]string{}
	for _, c := range checks {
		got[c.Target] = c.Status
	}
	return got
}

func TestTargetsJudgeBatonAgainstTheBestOfTheRun(t *testing.T) {
	checks := Targets(sampleReport().Results)
	require.Equal(t, map[string]string{
		"hot-key: wait p99 ≤ 1/3 of the best's":                  "PASS", // 9ms ≤ 40ms/3
		"hot-key: fairness ≥ 0.9":                                "MISS", // 0.875
		"hot-key: acq/s ≥ 1.1× the best's":                       "PASS", // 1000 ≥ 880
		"hot-key: hand-off gap p50 ≤ 1.5× PING p50":              "PASS", // exactly 1.5
		"hot-key: ≤ 12 server commands per acquisition":          "PASS", // 4
		"storm: acq/s ≥ the best's":                              "SKIP",
		"storm: wait p99 ≤ 1/3 of the best's":                    "SKIP",
		"storm: fairness ≥ 0.8":                                  "SKIP",
		"storm: ≤ 12 server commands per acquisition":            "SKIP",
		"uncontended: acq/s ≥ the best's":                        "MISS", // 20000 < 25000
		"uncontended: server µs ≤ 1.5× a SET NX + unlock pair's": "PASS", // 9 ≤ 1.5 × 6
		"uncontended: one round trip per Lock and per Unlock":    "PASS", // 2 commands
	}, statuses(checks))

	var buf bytes.Buffer
	require.NoError(t, WriteTargets(&buf, checks))
	require.Contains(t, buf.String(), "baton 20000, poll-1ms 25000")
	require.Contains(t, buf.String(), "baton 9.00, poll-1ms 6.00 µs/acq")
}

func TestTargetsPickTheBestPerFigure(t *testing.T) {
	results := []Result{
		{Algorithm: BatonName, Scenario: storm, WaitP99: 10 * time.Millisecond, AcqPerSec: 500},
		{Algorithm: "fast-but-unfair", Scenario: storm, WaitP99: 90 * time.Millisecond, AcqPerSec: 700},
		{Algorithm: "slow-but-short-tail", Scenario: storm, WaitP99: 20 * time.Millisecond, AcqPerSec: 300},
	}
	checks := Targets(results)
	byTarget := map[string]Check{}
	for _, c := range checks {
		byTarget[c.Target] = c
	}
	wait := byTarget["storm: wait p99 ≤ 1/3 of the best's"]
	require.Equal(t, "MISS", wait.Status, "10ms > 20ms/3: judged against the shortest tail")
	require.Contains(t, wait.Detail, "slow-but-short-tail")
	acq := byTarget["storm: acq/s ≥ the best's"]
	require.Equal(t, "MISS", acq.Status, "500 < 700: judged against the highest throughput")
	require.Contains(t, acq.Detail, "fast-but-unfair")
	require.Equal(t, "SKIP", byTarget["storm: ≤ 12 server commands per acquisition"].Status, "no commandstats, nothing to judge")
	require.Equal(t, "SKIP", byTarget["hot-key: hand-off gap p50 ≤ 1.5× PING p50"].Status, "no hot-key results")
}

// A figure is judged as shown: 0.8996 prints as 0.900 and passes 0.9;
// 0.8994 prints as 0.899 and does not.
func TestTargetsJudgeTheShownValue(t *testing.T) {
	for _, tc := range []struct {
		fairness float64
		want     string
	}{{0.8996, "PASS"}, {0.8994, "MISS"}, {0.9, "PASS"}} {
		results := []Result{{Algorithm: BatonName, Scenario: hotKey, Fairness: tc.fairness, GapPerPing: ptr(1.504), GapP50: ptr(time.Millisecond)}}
		got := statuses(Targets(results))
		require.Equal(t, tc.want, got["hot-key: fairness ≥ 0.9"], "fairness %v", tc.fairness)
		require.Equal(t, "PASS", got["hot-key: hand-off gap p50 ≤ 1.5× PING p50"], "1.504 shows as 1.50")
	}
}
