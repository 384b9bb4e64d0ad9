// Command baton-bench compares baton with polling Redis locks on several
// workloads and prints a table, the performance targets, and optionally
// JSON, CSV and an SVG chart.
//
// By default it runs on an embedded miniredis, so it works anywhere; the
// figures that matter come from a real Redis:
//
//	baton-bench -addr 127.0.0.1:6379 -out bench/results
//
// Every run uses its own key prefix (bench:*); baton's fencing counters stay
// behind, so point it at a scratch server.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/bench"
)

// quickDuration keeps a -quick run of all 16 runs within 15 seconds.
const quickDuration = 600 * time.Millisecond

type options struct {
	addr, url, cluster string
	duration           time.Duration
	quick              bool
	workers, names     int
	hold, think        time.Duration
	algos, scenarios   string
	out                string
}

func main() {
	var o options
	flag.StringVar(&o.addr, "addr", "", "run on the Redis at host:port instead of an embedded miniredis")
	flag.StringVar(&o.url, "url", "", "run on the Redis at this redis:// or rediss:// URL")
	flag.StringVar(&o.cluster, "cluster", "", "run on a Redis Cluster given as host:port,host:port,... (default scenario: many-keys)")
	flag.DurationVar(&o.duration, "duration", bench.DefaultDuration, "how long each algorithm runs each scenario")
	flag.BoolVar(&o.quick, "quick", false, "short runs ("+quickDuration.String()+" each), for a smoke test")
	flag.IntVar(&o.workers, "workers", 0, "override every scenario's number of workers")
	flag.IntVar(&o.names, "names", 0, "override every scenario's number of lock names")
	flag.DurationVar(&o.hold, "hold", 0, "override every scenario's hold time")
	flag.DurationVar(&o.think, "think", 0, "override every scenario's think time between release and next Lock")
	flag.StringVar(&o.algos, "algos", "", "comma list of algorithms (default all: "+strings.Join(names(bench.Algorithms(), func(a bench.Algorithm) string { return a.Name }), ",")+")")
	flag.StringVar(&o.scenarios, "scenarios", "", "comma list of scenarios (default all: "+strings.Join(names(bench.Scenarios(0), func(s bench.Scenario) string { return s.Name }), ",")+")")
	flag.StringVar(&o.out, "out", "", "write results.json, results.csv and chart.svg into this directory")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, explicitFlags()); err != nil {
		fmt.Fprintln(os.Stderr, "baton-bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, set map[string]bool) error {
	target, where, closeTarget, err := connect(o)
	if err != nil {
		return err
	}
	defer closeTarget()
	algos, err := selectAlgorithms(o.algos)
	if err != nil {
		return err
	}
	scenarios, err := selectScenarios(o, set)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "baton-bench on %s: %d algorithms × %d scenarios\n", where, len(algos), len(scenarios))
	suite := bench.Suite{Target: target, Algorithms: algos, Scenarios: scenarios, Progress: os.Stderr}
	results, err := suite.Run(ctx)
	if err != nil {
		return err
	}
	fmt.Println()
	if err := bench.WriteTable(os.Stdout, results); err != nil {
		return err
	}
	fmt.Printf("\ntargets (set for a real Redis; on %s):\n", where)
	if err := bench.WriteTargets(os.Stdout, bench.Targets(results)); err != nil {
		return err
	}
	if o.out == "" {
		return nil
	}
	if err := bench.WriteFiles(o.out, results); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote results.json, results.csv and chart.svg to %s\n", o.out)
	return nil
}

// connect returns the target the flags name, a description of it, and how
// to let it go.
func connect(o options) (bench.Target, string, func(), error) {
	given := 0
	for _, s := range []string{o.addr, o.url, o.cluster} {
		if s != "" {
			given++
		}
	}
	switch {
	case given > 1:
		return bench.Target{}, "", nil, errors.New("give at most one of -addr, -url and -cluster")
	case o.cluster != "":
		addrs := strings.Split(o.cluster, ",")
		return bench.Target{NewClient: func() redis.UniversalClient {
			return redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
		}}, "Redis Cluster " + o.cluster, func() {}, nil
	case o.url != "":
		opts, err := redis.ParseURL(o.url)
		if err != nil {
			return bench.Target{}, "", nil, err
		}
		return bench.Target{NewClient: func() redis.UniversalClient {
			c := *opts
			return redis.NewClient(&c)
		}}, "Redis " + opts.Addr, func() {}, nil
	case o.addr != "":
		return bench.Target{NewClient: func() redis.UniversalClient {
			return redis.NewClient(&redis.Options{Addr: o.addr})
		}}, "Redis " + o.addr, func() {}, nil
	}
	target, stop, err := bench.Embedded()
	return target, "embedded miniredis", stop, err
}

func selectAlgorithms(list string) ([]bench.Algorithm, error) {
	return pick(bench.Algorithms(), list, func(a bench.Algorithm) string { return a.Name })
}

// selectScenarios picks the scenarios and applies the duration and the
// overrides the user gave explicitly.
func selectScenarios(o options, set map[string]bool) ([]bench.Scenario, error) {
	d := o.duration
	if o.quick && !set["duration"] {
		d = quickDuration
	}
	list := o.scenarios
	if list == "" && o.cluster != "" {
		list = "many-keys" // the scenario that spreads over the slots
	}
	scenarios, err := pick(bench.Scenarios(d), list, func(s bench.Scenario) string { return s.Name })
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
