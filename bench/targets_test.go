package bench

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func byTarget(checks []Check) map[string]Check {
	got := map[string]Check{}
	for _, c := range checks {
		got[c.Target] = c
	}
	return got
}

func statuses(checks []Check) map[string]string {
	got := map[string]string{}
	for _, c := range checks {
		got[c.Target] = c.Status
	}
	return got
}

func TestTargetsOfASampleRun(t *testing.T) {
	checks := Targets(sampleReport().Results)
	require.Equal(t, map[string]string{
		"hot-key: wait p99 ≤ 1/3 of the best's":               "PASS", // 9ms ≤ 40ms/3
		"hot-key: fairness ≥ 0.9":                             "MISS", // 0.875
		"hot-key: acq/s ≥ 0.9× the FIFO limit":                "PASS", // 1000 ≥ 0.9/(1ms + 200µs)
		"hot-key: acq/s ≥ every peer with fairness ≥ 0.5":     "PASS", // poll-1ms is at 0.2
		"storm: acq/s ≥ 0.8× the FIFO limit":                  "SKIP",
		"storm: acq/s ≥ every peer with fairness ≥ 0.5":       "SKIP",
		"storm: wait p99 ≤ 1/3 of the best's":                 "SKIP",
		"storm: fairness ≥ 0.8":                               "SKIP",
		"uncontended: CPU per Lock+Unlock ≤ 1.2× redislock's": "MISS", // 61.5µs against 50µs
		"uncontended: one round trip per Lock and per Unlock": "PASS", // 2 commands
		"uncontended: server µs/acq ≤ 1.2× wire mode's":       "SKIP",
		"hot-key: server µs/acq ≤ 1.5× wire mode's":           "SKIP",
		"rw-9:1: longest write wait ≤ 1/10 of redisson-rw's":  "SKIP",
		"rw-9:1: reads/s ≥ 3× baton-plain's":                  "SKIP",
		"semaphore: 0 leaked after a holder's SIGKILL":        "SKIP",
		"semaphore: wake-ups per grant ≤ 1":                   "SKIP",
		"acks-hot-key: acq/s with acks ≥ 0.8× without":        "SKIP",
		"multi-lock: wait p99 ≤ 1/3 of the best's":            "SKIP",
		"multi-lock: fairness ≥ 0.8":                          "SKIP",
		"multi-lock: wait max ≤ 20× wait p50":                 "SKIP",
	}, statuses(checks))

	var buf bytes.Buffer
	require.NoError(t, WriteTargets(&buf, checks))
	for _, detail := range []string{
		"baton 1000 = 1.20× 1/(hold 1ms + ping 200µs) = 833",
		"none that fair; fairest: poll-1ms 0.200",
		"baton 61.5µs = 1.23× redislock-1ms 50µs",
	} {
		require.Contains(t, buf.String(), detail)
	}
	require.Contains(t, buf.String(), "server µs/acq", "server cost is judged against wire mode's (issue 26)")
}

// The FIFO limit is 1/(hold + PING p50) of baton's own run.
func TestFIFOTarget(t *testing.T) {
	for _, tc := range []struct {
		name     string
		scenario string
		hold     time.Duration
		ping     time.Duration
		acq      float64
		want     string
		detail   string
	}{
		{"hot key at 0.9× its limit", hotKey, time.Millisecond, 250 * time.Microsecond, 720, "PASS", "baton 720 = 0.90× 1/(hold 1ms + ping 250µs) = 800"},
		{"hot key just below", hotKey, time.Millisecond, 250 * time.Microsecond, 715, "MISS", "= 0.89×"},
		{"hot key shown as 0.90", hotKey, time.Millisecond, 250 * time.Microsecond, 716.5, "PASS", "= 0.90×"},
		{"storm: no hold, the limit is one per PING", storm, 0, 100 * time.Microsecond, 8000, "PASS", "baton 8000 = 0.80× 1/(hold 0 + ping 100µs) = 10000"},
		{"storm below 0.8", storm, 0, 100 * time.Microsecond, 7900, "MISS", "0.79×"},
		{"no PING measured", storm, 0, 0, 7900, "SKIP", "no PING measured"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			results := []Result{{Algorithm: BatonName, Scenario: tc.scenario, Hold: tc.hold, PingP50: tc.ping, AcqPerSec: tc.acq}}
			share := map[string]string{hotKey: "0.9", storm: "0.8"}[tc.scenario]
			c := byTarget(Targets(results))[tc.scenario+": acq/s ≥ "+share+"× the FIFO limit"]
			require.Equal(t, tc.want, c.Status, c.Detail)
			require.Contains(t, c.Detail, tc.detail)
		})
	}
}

// A peer at least half as fair as possible may not out-run baton; a less
// fair one may: that is what barging buys.
func TestFairPeersTarget(t *testing.T) {
	peer := func(name string, acq, fairness float64) Result {
		return Result{Algorithm: name, Scenario: storm, AcqPerSec: acq, Fairness: fairness}
	}
	baton := Result{Algorithm: BatonName, Scenario: storm, AcqPerSec: 8000, Fairness: 0.98}
	for _, tc := range []struct {
		name   string
		peers  []Result
		want   string
		detail string
	}{
		{"an unfair peer runs faster", []Result{peer("poll-10ms", 16000, 0.003)}, "PASS", "none that fair; fairest: poll-10ms 0.003"},
		{"a fair peer runs faster", []Result{peer("poll-10ms", 16000, 0.003), peer("fair-poller", 8001, 0.5)}, "MISS",
			"baton 8000, fastest that fair: fair-poller 8001 (0.500)"},
		{"fair peers run slower", []Result{peer("a", 7999, 0.9), peer("b", 6000, 0.95)}, "PASS", "fastest that fair: a 7999"},
		{"fairness shown as 0.500 counts", []Result{peer("edge", 9000, 0.4996)}, "MISS", "edge 9000 (0.500)"},
		{"fairness shown as 0.499 does not", []Result{peer("edge", 9000, 0.4994)}, "PASS", "none that fair; fairest: edge 0.499"},
		{"equal as shown", []Result{peer("tie", 8000.4, 0.9)}, "PASS", "tie 8000"},
		{"no peers", nil, "SKIP", "nothing to compare with"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := byTarget(Targets(append([]Result{baton}, tc.peers...)))["storm: acq/s ≥ every peer with fairness ≥ 0.5"]
			require.Equal(t, tc.want, c.Status, c.Detail)
			require.Contains(t, c.Detail, tc.detail)
		})
	}
}

// Uncontended, baton's wall and CPU time per Lock+Unlock are judged against
// the faster of the redislock variants, never against a polling recipe.
func TestRedislockTargets(t *testing.T) {
	un := func(name string, acq float64, cpu *time.Duration) Result {
		return Result{Algorithm: name, Scenario: uncontend, Workers: 1, AcqPerSec: acq, CPUPerAcq: cpu}
	}
	for _, tc := range []struct {
		name       string
		results    []Result
		wall, cpu  string
		wallDetail string
		cpuDetail  string
	}{
		{"within both", []Result{un(BatonName, 10000, ptr(60*time.Microsecond)), un("redislock-1ms", 11000, ptr(50*time.Microsecond))},
			"PASS", "PASS", "baton 100µs = 1.10× redislock-1ms 90.9µs", "baton 60µs = 1.20× redislock-1ms 50µs"},
		{"beyond both", []Result{un(BatonName, 7000, ptr(75*time.Microsecond)), un("redislock-1ms", 10000, ptr(50*time.Microsecond))},
			"MISS", "MISS", "1.43×", "1.50×"},
		{"the faster redislock per figure", []Result{un(BatonName, 10000, ptr(60*time.Microsecond)),
			un("redislock-1ms", 12000, ptr(55*time.Microsecond)), un("redislock-10ms", 11000, ptr(45*time.Microsecond))},
			"MISS", "MISS", "redislock-1ms 83.3µs", "redislock-10ms 45µs"},
		{"polling recipes do not count", []Result{un(BatonName, 10000, ptr(60*time.Microsecond)), un("poll-1ms", 30000, ptr(20*time.Microsecond))},
			"SKIP", "SKIP", "nothing to compare with", "nothing to compare with"},
		{"CPU not measured", []Result{un(BatonName, 10000, nil), un("redislock-1ms", 10000, nil)},
			"PASS", "SKIP", "1.00×", "nothing to compare with"},
		{"CPU not measured for baton", []Result{un(BatonName, 10000, nil), un("redislock-1ms", 10000, ptr(50*time.Microsecond))},
			"PASS", "SKIP", "1.00×", "not measured for baton"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := byTarget(slices.Concat(Targets(tc.results), RTTTargets(tc.results, RTTJudged)))
			wall, cpu := got["uncontended: wall per Lock+Unlock ≤ 1.1× redislock's"], got["uncontended: CPU per Lock+Unlock ≤ 1.2× redislock's"]
			require.Equal(t, tc.wall, wall.Status, wall.Detail)
			require.Contains(t, wall.Detail, tc.wallDetail)
			require.Equal(t, tc.cpu, cpu.Status, cpu.Detail)
			require.Contains(t, cpu.Detail, tc.cpuDetail)
		})
	}
}

func TestGapTargets(t *testing.T) {
	for _, tc := range []struct {
		name     string
		scenario string
		result   Result
		want     string
		detail   string
	}{
		{"idle hand-off at 1.25×", idleHandoff, Result{GapP50: ptr(1250 * time.Microsecond), PingP50: time.Millisecond, GapPerPing: ptr(1.25)},
			"PASS", "gap 1.25ms = 1.25× ping 1ms"},
		{"idle hand-off at 2.3×", idleHandoff, Result{GapP50: ptr(2300 * time.Microsecond), PingP50: time.Millisecond, GapPerPing: ptr(2.3)},
			"MISS", "2.30×"},
		{"no hand-offs", idleHandoff, Result{PingP50: time.Millisecond}, "MISS", "no hand-off measured"},
		{"1.254 shows as 1.25", idleHandoff, Result{GapP50: ptr(time.Millisecond), PingP50: time.Millisecond, GapPerPing: ptr(1.254)}, "PASS", "1.25×"},
		{"semaphore's idle hand-off at 1.3×", semHandoff, Result{GapP50: ptr(1300 * time.Microsecond), PingP50: time.Millisecond, GapPerPing: ptr(1.3)},
			"MISS", "gap 1.3ms = 1.30× ping 1ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.result
			r.Algorithm, r.Scenario = BatonName, tc.scenario
			if tc.scenario == semHandoff {
				r.Algorithm = BatonSemaphoreName // the semaphore's gap is baton's Semaphore's, not its lock's
			}
			name := tc.scenario + ": hand-off gap p50 ≤ 1.25× PING p50"
			c := byTarget(RTTTargets([]Result{r}, RTTJudged))[name]
			require.Equal(t, tc.want, c.Status, c.Detail)
			require.Contains(t, c.Detail, tc.detail)
			c = byTarget(RTTTargets([]Result{r}, 0))[name]
			require.Equal(t, "SKIP", c.Status, "judged only through a delay proxy")
			require.Equal(t, "no -rtt", c.Detail)
		})
	}
}

// The last of the reads a write's release admits is judged in PINGs.
func TestLastReadTarget(t *testing.T) {
	const name = rwAdmits + ": last of 10 reads holds ≤ 1.5× PING after Unlock"
	judge := func(r Result) Check {
		r.Algorithm, r.Scenario = BatonRWName, rwAdmits
		return byTarget(RTTTargets([]Result{r}, RTTJudged))[name]
	}
	c := judge(Result{LastReadP50: ptr(1500 * time.Microsecond), LastReadPerPing: ptr(1.5), PingP50: time.Millisecond})
	require.Equal(t, "PASS", c.Status, c.Detail)
	require.Equal(t, "1.5ms = 1.50× ping 1ms", c.Detail)
	c = judge(Result{LastReadP50: ptr(1600 * time.Microsecond), LastReadPerPing: ptr(1.6), PingP50: time.Millisecond})
	require.Equal(t, "MISS", c.Status, c.Detail)
	c = judge(Result{PingP50: time.Millisecond})
	require.Equal(t, "MISS", c.Status)
	require.Contains(t, c.Detail, "admitted all 10")
}

func TestWaitTargetPicksTheShortestTail(t *testing.T) {
	results := []Result{
		{Algorithm: BatonName, Scenario: storm, WaitP99: 10 * time.Millisecond, AcqPerSec: 500},
		{Algorithm: "fast-but-unfair", Scenario: storm, WaitP99: 90 * time.Millisecond, AcqPerSec: 700},
		{Algorithm: "slow-but-short-tail", Scenario: storm, WaitP99: 20 * time.Millisecond, AcqPerSec: 300},
	}
	wait := byTarget(Targets(results))["storm: wait p99 ≤ 1/3 of the best's"]
	require.Equal(t, "MISS", wait.Status, "10ms > 20ms/3: judged against the shortest tail")
	require.Contains(t, wait.Detail, "slow-but-short-tail")
}

// A figure is judged as shown: 0.8996 prints as 0.900 and passes 0.9;
// 0.8994 prints as 0.899 and does not.
func TestTargetsJudgeTheShownValue(t *testing.T) {
	for _, tc := range []struct {
		fairness float64
		want     string
	}{{0.8996, "PASS"}, {0.8994, "MISS"}, {0.9, "PASS"}} {
		results := []Result{{Algorithm: BatonName, Scenario: hotKey, Fairness: tc.fairness}}
		require.Equal(t, tc.want, statuses(Targets(results))["hot-key: fairness ≥ 0.9"], "fairness %v", tc.fairness)
	}
}

// Baton's own format's server cost is judged against wire mode's in the
// same run: at most 1.2× uncontended, 1.5× contended.
func TestWireServerCostTargets(t *testing.T) {
	usec := func(v float64) *float64 { return &v }
	results := []Result{
		{Scenario: uncontend, Algorithm: BatonName, ServerUsecPerAcq: usec(12)},
		{Scenario: uncontend, Algorithm: WireName, ServerUsecPerAcq: usec(10)},
		{Scenario: hotKey, Algorithm: BatonName, ServerUsecPerAcq: usec(16)},
		{Scenario: hotKey, Algorithm: WireName, ServerUsecPerAcq: usec(10)},
	}
	got := byTarget([]Check{wireTarget(results, uncontend, wireUncontended), wireTarget(results, hotKey, wireContended)})
	require.Equal(t, "PASS", got["uncontended: server µs/acq ≤ 1.2× wire mode's"].Status)
	c := got["hot-key: server µs/acq ≤ 1.5× wire mode's"]
	require.Equal(t, "MISS", c.Status)
	require.Equal(t, "baton 16.0µs = 1.60× wire 10.0µs", c.Detail)
}

// The RW targets judge baton-rw on the 9:1 scenario: its longest write wait
// against the reader-preferring lock's, its reads/s against the plain
// lock's, each as shown (two decimals).
func TestRWTargets(t *testing.T) {
	rw := func(algo string, reads float64, writeMax time.Duration) Result {
		return Result{Scenario: rwMostlyReads, Algorithm: algo, ReadsPerSec: &reads, WriteWaitMax: &writeMax}
	}
	judge := func(results ...Result) map[string]Check {
		checks := byTarget(Targets(results))
		return map[string]Check{
			"wait":  checks["rw-9:1: longest write wait ≤ 1/10 of redisson-rw's"],
			"reads": checks["rw-9:1: reads/s ≥ 3× baton-plain's"],
		}
	}
	got := judge(rw(BatonRWName, 3000, 20*time.Millisecond), rw(RedissonRWName, 2000, 200*time.Millisecond),
		rw(BatonPlainName, 1000, 5*time.Millisecond))
	require.Equal(t, "PASS", got["wait"].Status, got["wait"].Detail)
	require.Equal(t, "baton-rw 20ms, redisson-rw 200ms (10.00×)", got["wait"].Detail)
	require.Equal(t, "PASS", got["reads"].Status)
	require.Equal(t, "baton-rw 3000 = 3.00× baton-plain 1000", got["reads"].Detail)

	got = judge(rw(BatonRWName, 2990, 21*time.Millisecond), rw(RedissonRWName, 2000, 200*time.Millisecond),
		rw(BatonPlainName, 1000, 5*time.Millisecond))
	require.Equal(t, "MISS", got["wait"].Status, "9.52×")
	require.Equal(t, "MISS", got["reads"].Status, "2.99×")

	got = judge(rw(BatonRWName, 3000, 20*time.Millisecond))
	require.Equal(t, "SKIP", got["wait"].Status)
	require.Equal(t, "nothing to compare with", got["reads"].Detail)
	got = judge(rw(RedissonRWName, 2000, time.Second), rw(BatonPlainName, 1000, time.Second))
	require.Equal(t, "no baton-rw result", got["wait"].Detail)
}

func TestSemaphoreLeakTarget(t *testing.T) {
	leak := func(n int64) []Result {
		return []Result{{Scenario: semaphore, Algorithm: BatonSemaphoreName, PermitsLeaked: &n}}
	}
	name := "semaphore: 0 leaked after a holder's SIGKILL"
	require.Equal(t, "PASS", byTarget(Targets(leak(0)))[name].Status)
	c := byTarget(Targets(leak(2)))[name]
	require.Equal(t, "MISS", c.Status)
	require.Equal(t, "baton-semaphore 2 of 2 leaked", c.Detail)
	c = byTarget(Targets([]Result{{Scenario: semaphore, Algorithm: BatonSemaphoreName}}))[name]
	require.Equal(t, "SKIP", c.Status)
}

func TestSemaphoreWakeupTarget(t *testing.T) {
	per := func(algo string, v *float64) []Result {
		return []Result{{Scenario: semaphore, Algorithm: algo, WakeupsPerGrant: v}}
	}
	name := "semaphore: wake-ups per grant ≤ 1"
	require.Equal(t, "PASS", byTarget(Targets(per(BatonSemaphoreName, ptr(1.004))))[name].Status, "shown as 1.00")
	c := byTarget(Targets(per(BatonSemaphoreName, ptr(3.5))))[name]
	require.Equal(t, "MISS", c.Status)
	require.Equal(t, "baton-semaphore 3.50", c.Detail)
	require.Equal(t, "SKIP", byTarget(Targets(per(BatonSemaphoreName, nil)))[name].Status)
	require.Equal(t, "SKIP", byTarget(Targets(per(CounterSemaphoreName, ptr(1.0))))[name].Status, "the counter's is not judged")
}
