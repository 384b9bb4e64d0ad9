package bench

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// testCtx bounds a test's runs: a minute, ended with the test.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// realTarget is a fresh redis-server of the test's own, every client as
// the default user (INFO and the bench:* keys).
func realTarget(t *testing.T) Target {
	srv := redistest.Start(t)
	return Target{Name: "redis-server on " + srv.Addr, URL: "redis://" + srv.Addr, NewClient: func() redis.UniversalClient {
		return redis.NewClient(&redis.Options{Addr: srv.Addr})
	}}
}

// The whole harness, every algorithm on every scenario, on a real server:
// every run must take locks, and no two workers may ever hold one name at
// once.
func TestSuiteOnARealServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	suite := Suite{Target: realTarget(t), Algorithms: Algorithms(), Scenarios: Scenarios(150 * time.Millisecond)}
	rep, err := suite.Run(ctx)
	require.NoError(t, err)
	require.Len(t, rep.Results, len(suite.Algorithms)*len(suite.Scenarios))
	require.NotEmpty(t, rep.Meta.RedisVersion)
	require.Contains(t, rep.Meta.Server, "Redis "+rep.Meta.RedisVersion)
	require.Empty(t, rep.Meta.Caveat)

	for _, r := range rep.Results {
		name := requireRan(t, r)
		require.Positive(t, r.PingP50, name)
		require.NotNil(t, r.ServerPerAcq, name)
		require.NotNil(t, r.ServerUsecPerAcq, name)
		require.Positive(t, *r.ServerUsecPerAcq, name)
		require.NotNil(t, r.CPUPerAcq, name)
		require.Positive(t, *r.CPUPerAcq, name)
		switch r.Scenario {
		case uncontend:
			// One command to lock, one to unlock; a script load or two at most.
			// Redisson's unlock adds the DEL of its latch, as Java's does.
			want, delta := 2.0, 0.1
			if r.Algorithm == WireName {
				// The latch's DEL goes out in the background after Unlock
				// returns, so a DEL of a pair before the window can land in
				// it: one in flight at each edge of the one worker's window.
				// A DEL still in flight as the next Lock goes out takes a
				// second connection, which the pool may dial in the window,
				// with its handshake (HELLO, CLIENT SETINFO twice, CLIENT
				// MAINT_NOTIFICATIONS: 4 at most): under load 10 to 20 dials
				// in a window, which failed CI at 3.14 per acquisition.
				want, delta = 3, 0.1+float64(2+4*r.ClientDials)/float64(r.Acquisitions)
			}
			require.InDelta(t, want, r.ClientPerAcq, delta, name)
		case hotKey:
			if r.Algorithm == BatonName || r.Algorithm == "poll-1ms" {
				require.Positive(t, r.Handoffs, "eight workers on one name hand it over: %s", name)
				require.NotNil(t, r.GapPerPing, name)
			}
		case idleHandoff:
			if r.Algorithm == BatonName {
				// Every acquisition but the first, unless a worker stalled
				// for a whole hold between its Unlock and its next Lock.
				require.GreaterOrEqual(t, r.Handoffs, r.Acquisitions/2, name)
				require.NotNil(t, r.GapPerPing, name)
				require.NotNil(t, r.GapP99, name)
			}
		}
	}
}

// requireRan checks that run r took locks, never two at once, and
// returns its name for the caller's checks.
func requireRan(t *testing.T, r Result) string {
	t.Helper()
	name := r.Algorithm + " on " + r.Scenario
	require.Zero(t, r.Violations, name)
	require.Positive(t, r.Acquisitions, name)
	return name
}

// Every algorithm, broken by giving each worker a key prefix of its own so
// that no two of them ever contend: the harness must see the overlaps.
func TestSuiteCountsViolationsOfEveryBrokenAlgorithm(t *testing.T) {
	target := realTarget(t)
	var workers atomic.Int64
	var broken []Algorithm
	for _, a := range Algorithms() {
		broken = append(broken, Algorithm{Name: a.Name, New: func(e Env) (Locker, error) {
			e.Prefix += fmt.Sprintf("w%d:", workers.Add(1))
			return a.New(e)
		}})
	}
	hot := Scenario{Name: "hot", Workers: 4, Hold: time.Millisecond, Names: 1, Duration: 150 * time.Millisecond}
	rep, err := Suite{Target: target, Algorithms: broken, Scenarios: []Scenario{hot}}.Run(testCtx(t))
	require.NoError(t, err)
	for _, r := range rep.Results {
		require.Positive(t, r.Violations, "%s: four holders of one name at once", r.Algorithm)
	}
}

// chanLocker is a lock in the bench process itself, shared by the workers of
// one run: a hand-off that costs the server nothing.
type chanLocker chan struct{}

func (c chanLocker) Lock(ctx context.Context, _ string) (Held, error) {
	select {
	case c <- struct{}{}:
		return c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
func (c chanLocker) Unlock(context.Context) error { <-c; return nil }
func (chanLocker) Close() error                   { return nil }

// In the idle hand-off the holders PING on their own clients: those PINGs
// are the gap's yardstick and no command of the lock, and no other client
// pings.
func TestHolderPingsAreTheYardstickNotTheLocksCost(t *testing.T) {
	shared := make(chanLocker, 1)
	local := Algorithm{Name: "in-process", New: func(Env) (Locker, error) { return shared, nil }}
	idle := Scenarios(150 * time.Millisecond)[1]
	require.Equal(t, idleHandoff, idle.Name)
	require.True(t, idle.HolderPings)
	srv := redistest.Start(t)
	target := Target{Name: srv.Addr, NewClient: func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: srv.Addr}) }}
	before, err := redistest.ReadCommandStats(testCtx(t), srv.Admin())
	require.NoError(t, err)
	rep, err := Suite{Target: target, Algorithms: []Algorithm{local}, Scenarios: []Scenario{idle}}.Run(testCtx(t))
	require.NoError(t, err)
	r := rep.Results[0]
	after, err := redistest.ReadCommandStats(testCtx(t), srv.Admin())
	require.NoError(t, err)
	// One PING per worker as it starts, then one per hold but the one the
	// end of the run cut short: a pinger would add one every 10 ms.
	require.LessOrEqual(t, after["ping"]-before["ping"], int64(idle.Workers)+r.Acquisitions)
	require.Zero(t, r.Violations)
	require.Greater(t, r.Acquisitions, int64(10), "2 ms holds, 150 ms")
	require.GreaterOrEqual(t, r.Handoffs, r.Acquisitions/2, "each waits for the other's release, unless stalled for a hold")
	require.Positive(t, r.PingP50)
	require.NotNil(t, r.GapPerPing)
	require.Zero(t, r.ClientCommands, "the holders' PINGs are not the lock's")
	require.Empty(t, r.ServerCommands, "nor the server's, and no pinger ran besides them")
}

// orderedLocker grants every Lock at once, and notes which algorithm ran.
type orderedLocker struct{}

func (orderedLocker) Lock(context.Context, string) (Held, error) { return orderedLocker{}, nil }
func (orderedLocker) Unlock(context.Context) error               { return nil }
func (orderedLocker) Close() error                               { return nil }

func TestRoundsRotateTheOrderAndReportTheMedian(t *testing.T) {
	target, stop, err := Embedded()
	require.NoError(t, err)
	defer stop()
	var mu sync.Mutex
	var order []string
	var algos []Algorithm
	for _, name := range []string{"a", "bb", "a-long-name"} {
		algos = append(algos, Algorithm{Name: name, New: func(Env) (Locker, error) {
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			return orderedLocker{}, nil
		}})
	}
	one := Scenario{Name: "one", Workers: 1, Names: 1, Duration: 20 * time.Millisecond}
	var progress bytes.Buffer
	rep, err := Suite{Target: target, Algorithms: algos, Scenarios: []Scenario{one}, Rounds: 4, Progress: &progress}.Run(testCtx(t))
	require.NoError(t, err)
	require.Equal(t, []string{
		"a", "bb", "a-long-name",
		"bb", "a-long-name", "a",
		"a-long-name", "a", "bb",
		"a", "bb", "a-long-name",
	}, order)
	require.Len(t, rep.Results, 3, "one result per algorithm, in table order")
	for i, r := range rep.Results {
		require.Equal(t, algos[i].Name, r.Algorithm)
		require.Equal(t, 4, r.Rounds)
		require.LessOrEqual(t, r.AcqPerSecMin, r.AcqPerSec)
		require.LessOrEqual(t, r.AcqPerSec, r.AcqPerSecMax)
	}
	require.Equal(t, 4, rep.Meta.Rounds)

	lines := strings.Split(strings.TrimSpace(progress.String()), "\n")
	require.Len(t, lines, 12)
	for _, l := range lines {
		require.Equal(t, strings.Index(lines[0], "acq/s"), strings.Index(l, "acq/s"), "aligned: %q", l)
	}
	require.True(t, strings.HasPrefix(lines[0], "[ 1/12] r1/4"), lines[0])

	progress.Reset()
	_, err = Suite{Target: target, Algorithms: algos[:1], Scenarios: []Scenario{one}, Rounds: 10, Progress: &progress}.Run(testCtx(t))
	require.NoError(t, err)
	lines = strings.Split(strings.TrimSpace(progress.String()), "\n")
	require.Equal(t, "[ 1/10] r 1/10", lines[0][:len("[ 1/10] r 1/10")])
	require.Equal(t, strings.Index(lines[0], "acq/s"), strings.Index(lines[9], "acq/s"), "aligned past nine rounds")
}

func TestEmbeddedServerRunsAreLabelled(t *testing.T) {
	target, stop, err := Embedded()
	require.NoError(t, err)
	defer stop()
	poll := Algorithms()[len(Algorithms())-2]
	one := Scenario{Name: "one", Workers: 2, Names: 1, Duration: 50 * time.Millisecond}
	rep, err := Suite{Target: target, Algorithms: []Algorithm{poll}, Scenarios: []Scenario{one}}.Run(testCtx(t))
	require.NoError(t, err)
	require.Equal(t, MiniredisCaveat, rep.Meta.Caveat)
	require.Nil(t, rep.Results[0].ServerPerAcq, "miniredis has no commandstats")
	require.Nil(t, rep.Results[0].CPUPerAcq, "miniredis's CPU is the process's own")
	require.Zero(t, rep.Results[0].Violations)
	var table, json, svg bytes.Buffer
	require.NoError(t, WriteTable(&table, rep))
	require.NoError(t, WriteJSON(&json, rep))
	require.NoError(t, WriteSVG(&svg, rep))
	for _, out := range []string{table.String(), json.String(), svg.String()} {
		require.Contains(t, out, "miniredis: these figures show behaviour, not speed")
	}
}

func TestSuiteRejectsABadScenarioBeforeRunning(t *testing.T) {
	target, stop, err := Embedded()
	require.NoError(t, err)
	defer stop()
	good := Scenario{Name: "good", Workers: 1, Names: 1, Duration: time.Hour}
	bad := Scenario{Name: "bad", Workers: 0, Names: 1, Duration: time.Second}
	start := time.Now()
	_, err = Suite{Target: target, Algorithms: Algorithms(), Scenarios: []Scenario{good, bad}}.Run(testCtx(t))
	require.ErrorContains(t, err, `"bad"`)
	require.Less(t, time.Since(start), time.Minute, "the good scenario did not run first")
}

// The server time of baton's and Redisson's lock scripts, an acquire and a
// release apart, and none on miniredis, which has no commandstats.
func TestScriptCostsOfTheLockScripts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	target := realTarget(t)
	admin := target.NewClient()
	defer admin.Close()
	wire := Algorithms()[slices.IndexFunc(Algorithms(), func(a Algorithm) bool { return a.Name == WireName })]
	for _, algo := range []Algorithm{Algorithms()[0], wire} {
		costs, err := measureScripts(ctx, target, admin, algo, KindLock)
		require.NoError(t, err)
		require.Len(t, costs, 1)
		c := costs[0]
		require.Equal(t, ScriptCost{Algorithm: algo.Name, Hold: "lock", Acquire: c.Acquire, Release: c.Release}, c)
		for _, call := range []CallCost{c.Acquire, c.Release} {
			require.Equal(t, 1.0, call.ScriptsPerCall, "one script per call: %+v", c)
			require.Positive(t, *call.UsecPerScript)
		}
	}

	mini, stop, err := Embedded()
	require.NoError(t, err)
	defer stop()
	miniAdmin := mini.NewClient()
	defer miniAdmin.Close()
	costs, err := measureScripts(ctx, mini, miniAdmin, Algorithms()[0], KindLock)
	require.NoError(t, err)
	require.Nil(t, costs)
}
