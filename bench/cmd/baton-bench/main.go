// Command baton-bench compares baton with the Go Redis lock libraries and
// the polling recipes on several workloads, and prints tables (speed,
// latency, cost), the performance targets, and optionally JSON, CSV and an
// SVG chart.
//
// With no -addr, -url or -cluster it starts a throwaway redis-server (from
// PATH) on a free loopback port, without persistence, and stops it when it
// ends, Ctrl-C included. Without redis-server, or with -miniredis, it runs
// on an embedded miniredis, says why, and every output says that those
// figures show behaviour, not speed; no target is judged there. It writes
// results.json, results.csv and chart.svg to -out, by default to a new
// folder under baton-bench-results/, and names it.
//
// With -rtt D every client reaches the server through a delay proxy of D
// each way, as over a network, and the round-trip targets are judged (set
// at 500us, a PING of about 1 ms); without -scenarios it runs those
// targets' scenarios:
//
//	go run ./bench/cmd/baton-bench
//	go run ./bench/cmd/baton-bench -rtt 500us
//	go run ./bench/cmd/baton-bench -addr 127.0.0.1:6379 -rounds 5 -out bench/results
//
// With -ab it runs no suite, but an A/B of the uncontended Lock+Unlock loop,
// whole process against whole process: each library (by default baton,
// redislock-1ms and redsync) runs -pairs pairs in a fresh process of this
// program, -rounds times (default 7) in an order rotated every round, on one
// redis-server, and it prints each run's wall and user+system CPU time per
// pair, and baton's ratios to each library per round and their medians:
//
//	go run ./bench/cmd/baton-bench -ab
//	go run ./bench/cmd/baton-bench -ab -rounds 5 -pairs 50000 -algos baton,redislock-1ms
//
// With -quorum it runs the quorum scenarios instead: baton's quorum mode
// against redsync (Redlock), one lock across 3 and across 5 throwaway
// redis-servers, uncontended, on the hot key and in the storm (with -rtt,
// a delay proxy before each node, and by default no storm):
//
//	go run ./bench/cmd/baton-bench -quorum
//	go run ./bench/cmd/baton-bench -quorum -rtt 500us
//
// Every run uses its own key prefix (bench:*); baton's fencing counters stay
// behind, so point -addr at a scratch server.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/batonlock/baton/bench"
)

// quickDuration and a single round keep a -quick run of every scenario
// short: its 72 runs take about 15 seconds, the semaphore's leak measure
// 3 more; the whole command took 23 s (bench/results/3aec049).
const quickDuration = 200 * time.Millisecond

type options struct {
	addr, url, cluster string
	miniredis          bool
	quorum             bool
	rtt                time.Duration
	duration           time.Duration
	rounds             int
	quick              bool
	workers, names     int
	hold, think        time.Duration
	algos, scenarios   string
	out                string
	ab                 bool
	pairs              int
}

func main() {
	var o options
	flag.StringVar(&o.addr, "addr", "", "run on the Redis at host:port (default: a throwaway redis-server)")
	flag.StringVar(&o.url, "url", "", "run on the Redis at this redis:// or rediss:// URL")
	flag.StringVar(&o.cluster, "cluster", "", "run on a Redis Cluster given as host:port,host:port,... (default scenario: many-keys)")
	flag.BoolVar(&o.miniredis, "miniredis", false, "run on an embedded miniredis: behaviour, not speed")
	flag.BoolVar(&o.quorum, "quorum", false, "run the quorum scenarios instead: one lock on 3 and on 5 throwaway redis-servers,\nbaton's quorum mode against redsync (Redlock)")
	flag.DurationVar(&o.rtt, "rtt", 0, "reach the server through a delay proxy of this much each way (500us: a PING of about 1 ms),\nas over a network; judges the round-trip targets, on their scenarios by default")
	flag.DurationVar(&o.duration, "duration", bench.DefaultDuration, "how long each algorithm runs each scenario in each round")
	flag.IntVar(&o.rounds, "rounds", bench.DefaultRounds, "run every algorithm this many times, in rotated order, and report the median")
	flag.BoolVar(&o.quick, "quick", false, "one short round ("+quickDuration.String()+" a run), for a smoke test")
	flag.IntVar(&o.workers, "workers", 0, "override every scenario's number of workers")
	flag.IntVar(&o.names, "names", 0, "override every scenario's number of lock names")
	flag.DurationVar(&o.hold, "hold", 0, "override every scenario's hold time")
	flag.DurationVar(&o.think, "think", 0, "override every scenario's think time between release and next Lock")
	flag.StringVar(&o.algos, "algos", "", "comma list of algorithms (default all: "+strings.Join(names(bench.AllAlgorithms(), func(a bench.Algorithm) string { return a.Name }), ",")+")")
	flag.StringVar(&o.scenarios, "scenarios", "", "comma list of scenarios (default all: "+strings.Join(names(bench.AllScenarios(0), func(s bench.Scenario) string { return s.Name }), ",")+")")
	flag.StringVar(&o.out, "out", "", "write results.json, results.csv and chart.svg into this directory\n(default "+resultsDir+"/<UTC date and time>)")
	flag.BoolVar(&o.ab, "ab", false, "instead of the suite, A/B the uncontended Lock+Unlock loop, each library in a fresh process per round\n(default -algos "+abAlgos+", -rounds "+strconv.Itoa(abRounds)+"; with -addr, -url or a throwaway redis-server)")
	flag.IntVar(&o.pairs, "pairs", abPairs, "with -ab: Lock+Unlock pairs per library per round")
	flag.Parse()

	bench.ServeHolder() // a semaphore scenario's leak measure runs this program as its holder
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if spec, ok := os.LookupEnv(childEnv); ok {
		os.Exit(child(ctx, spec, os.Stdout, os.Stderr))
	}
	if err := run(ctx, o, explicitFlags(), os.Stdout, os.Stderr); err != nil {
		if ctx.Err() != nil {
			err = errors.New("interrupted")
		}
		fmt.Fprintln(os.Stderr, "baton-bench:", err)
		stop()
		os.Exit(1) // after run's deferred calls: the server it started is gone
	}
}

func run(ctx context.Context, o options, set map[string]bool, stdout, stderr io.Writer) error {
	if o.ab {
		return runAB(ctx, o, set, stdout, stderr)
	}
	if set["pairs"] {
		return errors.New("-pairs applies to -ab only")
	}
	all := bench.AllAlgorithms()
	if o.quorum {
		all = bench.QuorumAlgorithms()
	}
	algos, err := selectAlgorithms(all, o.algos)
	if err != nil {
		return err
	}
	scenarios, err := selectScenarios(o, set)
	if err != nil {
		return err
	}
	rounds := o.roundCount(set)
	if rounds < 1 {
		return errors.New("-rounds must be at least 1")
	}
	replicated := slices.ContainsFunc(scenarios, func(s bench.Scenario) bool { return s.Kind == bench.KindReplicated })
	target, closeTarget, err := connect(o, replicated)
	if err != nil {
		return err
	}
	defer closeTarget()
	if replicated && target.Replicated == nil && !set["scenarios"] {
		// Only a throwaway master has a replica the bench started: the
		// default leaves the replicated scenarios out elsewhere.
		scenarios = slices.DeleteFunc(scenarios, func(s bench.Scenario) bool { return s.Kind == bench.KindReplicated })
	}
	if target.Miniredis {
		fmt.Fprintln(stderr, miniredisReason(o))
	}
	suite := bench.Suite{Target: target, Algorithms: algos, Scenarios: scenarios, Rounds: rounds, Progress: stderr}
	on := target.Name
	if target.RTT > 0 {
		on += ", through a delay proxy of " + target.RTT.String() + " each way"
	}
	fmt.Fprintf(stderr, "baton-bench on %s\n%d runs: %d scenario(s), each with the algorithms of its kind, × %d round(s)\n",
		on, suite.Runs(), len(scenarios), rounds)
	rep, err := suite.Run(ctx)
	if err != nil {
		return err
	}
	if rep.Meta.Commit == "" {
		rep.Meta.Commit = gitCommit(ctx)
	}
	fmt.Fprintln(stdout)
	if err := bench.WriteTable(stdout, rep); err != nil {
		return err
	}
	if err := bench.WriteJudged(stdout, rep); err != nil {
		return err
	}
	return writeFiles(o, rep, stdout)
}

// resultsDir is where a run writes its files when -out is not given, in a
// folder of its own named by its start (.gitignore keeps it out of git).
const resultsDir = "baton-bench-results"

// writeFiles writes the run's JSON, CSV and chart to -out, or to a new
// folder under resultsDir, and says where and how to open the chart.
func writeFiles(o options, rep bench.Report, stdout io.Writer) error {
	dir := o.out
	if dir == "" {
		dir = filepath.Join(resultsDir, rep.Meta.Date.Format("2006-01-02T15-04-05Z"))
	}
	if err := bench.WriteFiles(dir, rep); err != nil {
		return err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nwrote results.json, results.csv and chart.svg to\n  %s\n", dir)
	fmt.Fprintf(stdout, "open the chart in a web browser:\n  file://%s\n", filepath.ToSlash(filepath.Join(abs, "chart.svg")))
	return nil
}

// miniredisReason says in one line why the run is on miniredis.
func miniredisReason(o options) string {
	if o.miniredis {
		return "on miniredis, as -miniredis asks: figures of behaviour, not speed"
	}
	return "no redis-server on PATH, so on an embedded miniredis: install redis-server for speed figures"
}

// roundCount is -rounds, or 1 for -quick unless -rounds was given.
func (o options) roundCount(set map[string]bool) int {
	if o.quick && !set["rounds"] {
		return 1
	}
	return o.rounds
}

// gitCommit is the commit of the working tree, for a build that recorded
// none (go run, or -buildvcs=false); empty outside a git checkout.
func gitCommit(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "git", "describe", "--always", "--dirty=+dirty", "--abbrev=40").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// selectAlgorithms picks from all the algorithms in the list's order, or
// takes all when the list is empty.
func selectAlgorithms(all []bench.Algorithm, list string) ([]bench.Algorithm, error) {
	return pick(all, list, func(a bench.Algorithm) string { return a.Name })
}

// selectScenarios picks the scenarios and applies the duration and the
// overrides the user gave explicitly.
func selectScenarios(o options, set map[string]bool) ([]bench.Scenario, error) {
	d := o.duration
	if o.quick && !set["duration"] {
		d = quickDuration
	}
	list, all := o.scenarios, bench.AllScenarios(d)
	switch {
	case o.quorum:
		all = bench.QuorumScenarios(d)
		if list == "" && o.rtt > 0 {
			list = strings.Join(bench.QuorumRTTScenarios(), ",")
		}
	case list != "":
	case o.cluster != "":
		list = "many-keys" // the scenario that spreads over the slots
	case o.rtt > 0:
		list = strings.Join(bench.RTTScenarios(), ",") // those the round-trip targets judge
	}
	scenarios, err := pick(all, list, func(s bench.Scenario) string { return s.Name })
	for i := range scenarios {
		s := &scenarios[i]
		if set["workers"] {
			s.Workers = o.workers
		}
		if set["names"] {
			s.Names = o.names
		}
		if set["hold"] {
			s.Hold = o.hold
		}
		if set["think"] {
			s.Think = o.think
		}
	}
	return scenarios, err
}

// pick returns the items named in the comma list, in the list's order, or
// all of them when it is empty.
func pick[T any](all []T, list string, name func(T) string) ([]T, error) {
	if list == "" {
		return all, nil
	}
	var out []T
	for _, n := range strings.Split(list, ",") {
		i := slices.IndexFunc(all, func(t T) bool { return name(t) == strings.TrimSpace(n) })
		if i < 0 {
			return nil, fmt.Errorf("unknown name %q: choose from %s", n, strings.Join(names(all, name), ","))
		}
		out = append(out, all[i])
	}
	return out, nil
}

func names[T any](all []T, name func(T) string) []string {
	out := make([]string, len(all))
	for i, t := range all {
		out[i] = name(t)
	}
	return out
}

// explicitFlags reports which flags were given on the command line, so
// that only those override a scenario's own settings.
func explicitFlags() map[string]bool {
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}
