package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench"
	"github.com/batonlock/baton/bench/redistest"
)

// The A/B's children are this test binary, started with childEnv set.
// The run tests need a real redis-server: without one the package fails.
func TestMain(m *testing.M) {
	bench.ServeHolder()
	if spec, ok := os.LookupEnv(childEnv); ok {
		os.Exit(child(context.Background(), spec, os.Stdout, os.Stderr))
	}
	redistest.RequireInstalled()
	os.Exit(m.Run())
}

func TestSelectScenariosAppliesOnlyExplicitOverrides(t *testing.T) {
	o := options{duration: bench.DefaultDuration, workers: 5, hold: 2 * time.Millisecond}
	all, err := selectScenarios(o, map[string]bool{})
	require.NoError(t, err)
	require.Equal(t, bench.AllScenarios(bench.DefaultDuration), all, "flags at their zero defaults change nothing")

	o.scenarios = "storm,hot-key"
	got, err := selectScenarios(o, map[string]bool{"workers": true, "hold": true})
	require.NoError(t, err)
	require.Len(t, got, 2)
	for i, name := range []string{"storm", "hot-key"} {
		require.Equal(t, name, got[i].Name, "in the order asked")
		require.Equal(t, 5, got[i].Workers)
		require.Equal(t, 2*time.Millisecond, got[i].Hold)
		require.Equal(t, 1, got[i].Names, "not overridden")
	}
}

func TestSelectScenariosDefaults(t *testing.T) {
	got, err := selectScenarios(options{duration: time.Second, quick: true}, map[string]bool{})
	require.NoError(t, err)
	require.Equal(t, quickDuration, got[0].Duration)
	require.Equal(t, bench.DefaultRounds, options{rounds: bench.DefaultRounds}.roundCount(map[string]bool{}))
	require.Equal(t, 1, options{rounds: bench.DefaultRounds, quick: true}.roundCount(map[string]bool{}), "-quick is one round")
	require.Equal(t, 3, options{rounds: 3, quick: true}.roundCount(map[string]bool{"rounds": true}), "an explicit -rounds wins")
	got, err = selectScenarios(options{duration: time.Second, quick: true}, map[string]bool{"duration": true})
	require.NoError(t, err)
	require.Equal(t, time.Second, got[0].Duration, "an explicit -duration wins over -quick")

	got, err = selectScenarios(options{duration: time.Second, cluster: "127.0.0.1:7000"}, map[string]bool{})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, "many-keys", got[0].Name, "a cluster runs the scenario that spreads over slots")

	_, err = selectScenarios(options{scenarios: "hot-key,lukewarm"}, map[string]bool{})
	require.ErrorContains(t, err, `"lukewarm"`)
	_, err = selectAlgorithms(bench.AllAlgorithms(), "baton,poll-2ms")
	require.ErrorContains(t, err, `"poll-2ms"`)
}

// redisChildren lists the redis-server processes this test process started
// and still has (running or not yet reaped).
func redisChildren(t *testing.T) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	require.NoError(t, err)
	var pids []int
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // it exited while we looked
		}
		// pid (comm) state ppid ...
		s := string(b)
		open, close := strings.Index(s, "("), strings.LastIndex(s, ")")
		if open < 0 || close < open {
			continue
		}
		fields := strings.Fields(s[close+1:])
		if len(fields) < 2 || !strings.HasPrefix(s[open+1:close], "redis-server") {
			continue
		}
		if ppid, _ := strconv.Atoi(fields[1]); ppid == os.Getpid() {
			pid, _ := strconv.Atoi(strings.TrimSpace(s[:open]))
			pids = append(pids, pid)
		}
	}
	return pids
}

// readReport reads the results.json a run wrote to dir.
func readReport(t *testing.T, dir string) bench.Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	require.NoError(t, err)
	var rep bench.Report
	require.NoError(t, json.Unmarshal(b, &rep))
	return rep
}

// quickRun is a run of one polling recipe on one scenario, a few hundred ms.
func quickRun(extra options) options {
	o := extra
	o.duration, o.rounds, o.algos, o.scenarios = 100*time.Millisecond, 1, "poll-1ms", "hot-key"
	return o
}

func TestDefaultRunStartsAThrowawayServerAndStopsIt(t *testing.T) {
	redistest.Binary(t) // run starts a server of its own
	require.Empty(t, redisChildren(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	dir := t.TempDir()
	require.NoError(t, run(ctx, quickRun(options{out: dir}), map[string]bool{}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "throwaway redis-server on 127.0.0.1:")
	require.Contains(t, stdout.String(), "Redis ")
	require.NotContains(t, stdout.String(), "miniredis")
	require.Empty(t, redisChildren(t), "the server is gone")

	rep := readReport(t, dir)
	require.NotEmpty(t, rep.Meta.RedisVersion)
	require.Equal(t, 1, rep.Meta.Rounds)
}

// Ctrl-C cancels run's context: the run stops early, and the server it
// started is stopped before run returns.
func TestInterruptedRunLeavesNoServer(t *testing.T) {
	redistest.Binary(t) // run starts a server of its own
	ctx, cancel := context.WithCancel(context.Background())
	interrupted := make(chan struct{})
	defer func() { <-interrupted }()
	go func() {
		defer close(interrupted)
		deadline := time.Now().Add(30 * time.Second)
		for len(redisChildren(t)) == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond) // into the run
		cancel()
	}()
	o := quickRun(options{})
	o.duration = time.Minute
	start := time.Now()
	err := run(ctx, o, map[string]bool{}, io.Discard, io.Discard)
	require.Error(t, err)
	require.Less(t, time.Since(start), 30*time.Second, "the run stopped at the interrupt")
	require.Empty(t, redisChildren(t), "the server is gone")
}

func TestMiniredisRunsAreLabelled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Chdir(t.TempDir()) // the default folder for the files
	check := func(o options, why string) {
		var stdout, stderr bytes.Buffer
		o = quickRun(o)
		o.algos, o.scenarios = "poll-1ms,baton-semaphore", "hot-key,sem-idle-handoff"
		require.NoError(t, run(ctx, o, map[string]bool{}, &stdout, &stderr))
		require.Contains(t, stdout.String(), bench.MiniredisCaveat)
		require.Contains(t, stderr.String(), why)
		require.Contains(t, stderr.String(), "\n2 runs: 2 scenario(s)", "the header counts what the counter counts")
		require.Contains(t, stderr.String(), "[2/2]")
		require.Contains(t, stdout.String(), "targets: not judged, they are set for a real Redis")
		require.NotContains(t, stdout.String(), "MISS")
		_, semaphores, _ := strings.Cut(stdout.String(), "\nsemaphores\n")
		require.Regexp(t, `^ +scenario +algorithm +leaked +wakes/grant *\n +sem-idle-handoff +baton-semaphore +- +- *\n`, semaphores,
			"the semaphores table has baton's row, all n/a on miniredis")
		fitIn100Columns(t, stdout.String()+stderr.String())
	}
	check(options{miniredis: true}, "on miniredis, as -miniredis asks")
	t.Setenv("PATH", t.TempDir()) // no redis-server: the fallback
	check(options{}, "no redis-server on PATH, so on an embedded miniredis")
	charts, err := filepath.Glob(filepath.Join(resultsDir, "*", "chart.svg"))
	require.NoError(t, err)
	require.NotEmpty(t, charts, "written by default, to a folder of the run's own")

	_, _, err = connect(options{miniredis: true, addr: "127.0.0.1:1"}, false)
	require.ErrorContains(t, err, "at most one")
	require.ErrorContains(t, run(ctx, options{rounds: 0}, map[string]bool{}, io.Discard, io.Discard), "-rounds")
}

// fitIn100Columns checks that every line of out but a lone path fits.
func fitIn100Columns(t *testing.T, out string) {
	t.Helper()
	for line := range strings.Lines(out) {
		if !strings.Contains(strings.TrimSpace(line), " ") {
			continue // a path, as long as the folder's
		}
		require.LessOrEqual(t, utf8.RuneCountInString(strings.TrimRight(line, "\n")), 100, "%q", line)
	}
}

// With -rtt every client of the run, the pinger's included, reaches the
// server through the delay proxy, the round-trip targets are judged, and
// the JSON has the delay and the scripts' server time.
func TestRTTRunGoesThroughTheDelayProxy(t *testing.T) {
	redistest.Binary(t) // run starts a server of its own
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const rtt = 2 * time.Millisecond
	o := quickRun(options{rtt: rtt, out: t.TempDir()})
	o.algos, o.scenarios = "baton,redislock-1ms", ""
	scenarios, err := selectScenarios(o, map[string]bool{})
	require.NoError(t, err)
	require.Equal(t, bench.RTTScenarios(), names(scenarios, func(s bench.Scenario) string { return s.Name }), "-rtt's default")
	o.scenarios = "uncontended"
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(ctx, o, map[string]bool{}, &stdout, &stderr))
	require.Contains(t, stdout.String(), "through a delay proxy of 2ms each way")
	require.Contains(t, stdout.String(), "uncontended: wall per Lock+Unlock ≤ 1.1× redislock's")
	require.NotContains(t, stdout.String(), "latency has no target on loopback")
	fitIn100Columns(t, stdout.String()+stderr.String())

	rep := readReport(t, o.out)
	require.Equal(t, rtt, rep.Meta.RTT)
	for _, r := range rep.Results {
		require.GreaterOrEqual(t, r.PingP50, 2*rtt, "the pinger goes through the proxy: %s", r.Algorithm)
		require.GreaterOrEqual(t, time.Duration(float64(time.Second)/r.AcqPerSec), 4*rtt, "Lock and Unlock do: %s", r.Algorithm)
		require.Nil(t, r.CPUPerAcq, "the proxy's CPU is the process's")
	}
	require.Len(t, rep.Scripts, 2, "baton's and redislock's lock")
	require.Equal(t, "baton", rep.Scripts[0].Algorithm)
	require.NotNil(t, rep.Scripts[0].Acquire.UsecPerScript)

	for _, bad := range []options{{rtt: -time.Millisecond}, {rtt: rtt, miniredis: true}, {rtt: rtt, cluster: "127.0.0.1:1"}} {
		_, _, err := connect(bad, false)
		require.ErrorContains(t, err, "-rtt", "%+v", bad)
	}
}

// The acks-* scenarios run on a master of their own with a replica the
// command starts; with -rtt the replica's link crosses the delay proxy,
// so an acknowledgement's lag is at least a round trip of it. Every
// server is gone when run returns. Elsewhere they do not run.
func TestReplicatedRunStartsAMasterWithAReplica(t *testing.T) {
	redistest.Binary(t) // run starts servers of its own
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const rtt = 2 * time.Millisecond
	o := quickRun(options{rtt: rtt, out: t.TempDir()})
	o.algos, o.scenarios = "baton-acks-on,baton-acks-off", "acks-uncontended"
	require.NoError(t, run(ctx, o, map[string]bool{}, io.Discard, io.Discard))
	require.Empty(t, redisChildren(t), "the servers are gone")

	rep := readReport(t, o.out)
	require.Len(t, rep.Results, 2)
	for _, r := range rep.Results {
		require.NotNil(t, r.LagP50, r.Algorithm)
		require.GreaterOrEqual(t, *r.LagP50, 2*rtt, "the replica is behind the proxy: %s", r.Algorithm)
	}

	// On a server of the user's, the default leaves them out, and an
	// explicit list is refused.
	srv := redistest.Start(t)
	o = options{addr: srv.Addr, duration: 50 * time.Millisecond, rounds: 1, algos: "poll-1ms,baton-acks-on", out: t.TempDir()}
	var stdout bytes.Buffer
	require.NoError(t, run(ctx, o, map[string]bool{}, &stdout, io.Discard))
	require.Contains(t, stdout.String(), "hot-key")
	require.NotContains(t, stdout.String(), "acks-")
	o.scenarios = "acks-hot-key"
	require.ErrorContains(t, run(ctx, o, map[string]bool{"scenarios": true}, io.Discard, io.Discard), "need a master with a replica")
}
