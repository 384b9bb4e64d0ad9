package bench

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/bench/redistest/redisproc"
)

func TestQuorumScenariosAreValidated(t *testing.T) {
	all := QuorumScenarios(time.Second)
	require.Len(t, all, 3*len(QuorumSizes()), "uncontended, hot key and storm on each size")
	for _, sc := range all {
		require.NoError(t, sc.validate(), sc.Name)
		require.Equal(t, KindQuorum, sc.Kind)
		require.True(t, strings.HasSuffix(sc.Name, "-q3") || strings.HasSuffix(sc.Name, "-q5"), sc.Name)
	}
	base := Scenario{Name: "x", Workers: 1, Names: 1, Duration: time.Second}
	for _, bad := range []func(*Scenario){
		func(s *Scenario) { s.Kind, s.Nodes = KindQuorum, 2 },
		func(s *Scenario) { s.Nodes = 3 },
		func(s *Scenario) { s.Kind, s.Nodes, s.Permits = KindSemaphore, 3, 4 },
	} {
		sc := base
		bad(&sc)
		require.Error(t, sc.validate(), "%+v", sc)
	}
	_, err := Suite{Target: quorumTarget(t, 3), Scenarios: all[len(all)-1:]}.Run(context.Background())
	require.ErrorContains(t, err, "needs 5 nodes, the target has 3")
}

// quorumTarget is a target of n throwaway servers, ended with the test.
func quorumTarget(t *testing.T, n int) Target {
	var tg Target
	for range n {
		srv := redistest.Start(t)
		tg.Nodes = append(tg.Nodes, func() redis.UniversalClient { return srv.Client() })
	}
	tg.Name, tg.NewClient = "test quorum", tg.Nodes[0]
	return tg
}

// A quorum scenario's Lock reaches every node of its size, with clients of
// the worker's own that count what they write; the server figures and the
// pinger's round trip cover every node, and the per-call server time is
// the first node's share.
func TestQuorumRunReachesEveryNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tg := quorumTarget(t, 3)
	sc := QuorumScenarios(200 * time.Millisecond)[0]
	require.Equal(t, "uncontended-q3", sc.Name)
	rep, err := Suite{Target: tg, Algorithms: QuorumAlgorithms()[2:], Scenarios: []Scenario{sc}}.Run(ctx)
	require.NoError(t, err)
	require.Len(t, rep.Results, 1)
	r := rep.Results[0]
	require.Positive(t, r.Acquisitions)
	require.Zero(t, r.Violations)
	for i, node := range tg.Nodes {
		rdb := node()
		c, err := redisproc.ReadCommands(ctx, rdb)
		require.NoError(t, rdb.Close())
		require.NoError(t, err)
		// Each Lock sets the key on every node, but for the last, whose
		// ctx the run's end may cancel once a majority has answered.
		require.GreaterOrEqual(t, c.Calls["set"], r.Acquisitions-1, "node %d", i)
		// The worker's warm-up PINGs each node once; the pinger's make
		// the rest (one every 10 ms).
		require.GreaterOrEqual(t, c.Calls["ping"], int64(2), "the pinger reaches node %d", i)
	}
	require.GreaterOrEqual(t, r.ServerCommands["set"], 3*r.Acquisitions-1, "the server figures sum the nodes")
	// A Lock and an Unlock on each node, counted on every client (the
	// last Lock's SET on one node may be cut short, as above); besides, at
	// most a Lock the run's end cuts short and its give-back (3 each), and
	// the EVALs after the first release's NOSCRIPTs (3).
	require.GreaterOrEqual(t, r.ClientCommands, 6*r.Acquisitions-1)
	require.LessOrEqual(t, r.ClientCommands, 6*r.Acquisitions+9)
	require.Positive(t, r.PingP50)
	require.Len(t, rep.Scripts, 1)
	require.Equal(t, quorumHold, rep.Scripts[0].Hold)
	require.Equal(t, 1.0, rep.Scripts[0].Release.ScriptsPerCall, "one node's share")
}

// QuorumTargets judges baton on each size's hot key and storm against the
// redsync variants of the same scenario alone, its wait p99 against
// redsync-1ms's whatever the others' (the yardstick); QuorumRoundTwo
// gives baton's uncontended Lock less each yardstick of one round.
func TestQuorumTargetsAndRoundTwo(t *testing.T) {
	res := func(algo, scenario string, acq float64, p99 time.Duration, fair float64) Result {
		return Result{Algorithm: algo, Scenario: scenario, AcqPerSec: acq, WaitP99: p99, Fairness: fair}
	}
	results := []Result{
		res(BatonName, "hot-key-q3", 500, 10*time.Millisecond, 0.9),
		res("redsync", "hot-key-q3", 400, 3*time.Millisecond, 0), // a lower p99, not the yardstick
		res(redsyncRetry1ms, "hot-key-q3", 300, 30*time.Millisecond, 0.5),
		res(BatonName, "storm-q3", 100, 10*time.Millisecond, 0.5),
		res(redsyncRetry1ms, "storm-q3", 200, 20*time.Millisecond, 0.1),
		res("redsync", hotKey, 10_000, time.Microsecond, 1), // another scenario's: not compared
	}
	got := map[string]string{}
	for _, c := range QuorumTargets(results) {
		got[c.Target] = c.Status
	}
	require.Equal(t, "PASS", got["hot-key-q3: wait p99 ≤ 1/3 of redsync-1ms's"])
	require.Equal(t, "PASS", got["hot-key-q3: acq/s ≥ every redsync's"])
	require.Equal(t, "PASS", got["hot-key-q3: fairness ≥ 0.8"])
	require.Equal(t, "MISS", got["storm-q3: wait p99 ≤ 1/3 of redsync-1ms's"])
	require.Equal(t, "MISS", got["storm-q3: acq/s ≥ every redsync's"])
	require.Equal(t, "MISS", got["storm-q3: fairness ≥ 0.8"])
	require.Equal(t, "SKIP", got["storm-q5: fairness ≥ 0.8"])

	results = append(results,
		Result{Algorithm: BatonName, Scenario: "uncontended-q3", WaitP50: 3 * time.Millisecond, PingP50: 2 * time.Millisecond},
		Result{Algorithm: redsyncRetry1ms, Scenario: "uncontended-q3", WaitP50: 2500 * time.Microsecond})
	require.Equal(t, []string{"uncontended-q3: baton Lock p50 3ms − PING 2ms = 1ms; − redsync-1ms Lock 2.5ms = 500µs"},
		QuorumRoundTwo(results))

	// The widest line: every value 6 columns, both differences negative
	// (a CI run printed 101 columns before, with 's after redsync-1ms).
	widest := []Result{
		{Algorithm: BatonName, Scenario: "uncontended-q5", WaitP50: 20920 * time.Microsecond, PingP50: 27600 * time.Microsecond},
		{Algorithm: redsyncRetry1ms, Scenario: "uncontended-q5", WaitP50: 34120 * time.Microsecond},
	}
	line := QuorumRoundTwo(widest)[0]
	require.Contains(t, line, "= −6.68ms")
	require.Contains(t, line, "= −13.2ms")
	require.LessOrEqual(t, utf8.RuneCountInString(line), 98, "%q", line)
}
