package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"

	"github.com/batonlock/baton/bench"
	"github.com/batonlock/baton/bench/redistest/redisproc"
)

// The A/B's defaults: the 20,000 pairs, and more than its five
// alternations, for a median that one slow round does not move.
const (
	abPairs  = 20000
	abRounds = 7
	abAlgos  = "baton,redislock-1ms,redsync"
)

// childEnv, in the environment of a process of this program, makes it one
// A/B run: the variable holds a childSpec in JSON, and the process writes
// its bench.PairRun in JSON to stdout and exits.
const childEnv = "BATON_BENCH_AB_CHILD"

// childSpec is what a child runs.
type childSpec struct {
	Algorithm string `json:"algorithm"`
	URL       string `json:"url"`
	Pairs     int    `json:"pairs"`
}

// suiteOnly are the flags of a suite run, which an A/B refuses.
var suiteOnly = []string{"cluster", "miniredis", "quorum", "rtt", "duration", "quick", "workers", "names", "hold", "think", "scenarios", "out"}

// runAB runs the uncontended loop of each library in a fresh process of
// this program, alternating their order, and prints the figures.
func runAB(ctx context.Context, o options, set map[string]bool, stdout, stderr io.Writer) error {
	for _, f := range suiteOnly {
		if set[f] {
			return fmt.Errorf("-%s does not apply to -ab", f)
		}
	}
	rounds := o.rounds
	if !set["rounds"] {
		rounds = abRounds
	}
	if rounds < 1 || o.pairs < 1 {
		return errors.New("-ab needs -rounds and -pairs of at least 1")
	}
	list := o.algos
	if !set["algos"] {
		list = abAlgos
	}
	algos, err := selectAlgorithms(bench.Algorithms(), list) // the locks' loop: lock algorithms only
	if err != nil {
		return err
	}
	if err := bench.CheckAB(algos); err != nil {
		return err // before a server is started for nothing
	}
	name, url, stopServer, err := abServer(o)
	if err != nil {
		return err
	}
	defer stopServer()
	target, err := urlTarget(name, url, "")
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "baton-bench -ab on %s: %d libraries × %d round(s), %d pairs each, each in a fresh process\n",
		target.Name, len(algos), rounds, o.pairs)
	ab := bench.AB{Target: target, Algorithms: algos, Rounds: rounds, Pairs: o.pairs, Progress: stderr,
		RunChild: func(ctx context.Context, algo string) (bench.PairRun, error) {
			return runChild(ctx, exe, childSpec{Algorithm: algo, URL: url, Pairs: o.pairs}, stderr)
		}}
	rep, err := ab.Run(ctx)
	if err != nil {
		return err
	}
	if rep.Meta.Commit == "" {
		rep.Meta.Commit = gitCommit(ctx)
	}
	fmt.Fprintln(stdout)
	return bench.WriteAB(stdout, rep)
}

// abServer is the one server of an A/B, by URL, since the children dial it
// themselves: -url, -addr, or a throwaway redis-server stopped by stop. An
// empty name leaves the naming to urlTarget.
func abServer(o options) (name, url string, stop func(), err error) {
	switch {
	case o.url != "" && o.addr != "":
		return "", "", nil, errors.New("give at most one of -addr and -url")
	case o.url != "":
		return "", o.url, func() {}, nil // named by its address: the URL may hold a password
	case o.addr != "":
		return "Redis at " + o.addr, "redis://" + o.addr, func() {}, nil
	}
	srv, err := redisproc.Start(redisproc.Config{})
	if err != nil {
		return "", "", nil, fmt.Errorf("-ab measures speed on a real server: %w", err)
	}
	return "throwaway redis-server on " + srv.Addr, "redis://" + srv.Addr, srv.Stop, nil
}

// runChild runs one library's loop in a fresh process of exe and returns
// its figures. The child's errors go to stderr.
func runChild(ctx context.Context, exe string, spec childSpec, stderr io.Writer) (bench.PairRun, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return bench.PairRun{}, err
	}
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), childEnv+"="+string(b))
	cmd.Stderr = stderr
	out, err := cmd.Output()
	if err != nil {
		return bench.PairRun{}, fmt.Errorf("child process: %w", err)
	}
	var run bench.PairRun
	if err := json.Unmarshal(out, &run); err != nil {
		return bench.PairRun{}, fmt.Errorf("child process wrote %q: %w", out, err)
	}
	return run, nil
}

// child is the process runChild starts: it runs the loop spec names and
// writes its figures to stdout. It returns the exit code.
func child(ctx context.Context, spec string, stdout, stderr io.Writer) int {
	if err := childRun(ctx, spec, stdout); err != nil {
		fmt.Fprintln(stderr, "baton-bench child:", err)
		return 1
	}
	return 0
}

func childRun(ctx context.Context, spec string, stdout io.Writer) error {
	var s childSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		return fmt.Errorf("%s: %w", childEnv, err)
	}
	algo, rdb, err := bench.ForChild(bench.Algorithms(), s.Algorithm, s.URL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	prefix := "bench:ab:" + s.Algorithm + ":" + strconv.Itoa(os.Getpid()) + ":"
	run, err := bench.RunPairs(ctx, algo, rdb, prefix, s.Pairs)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(run)
}
