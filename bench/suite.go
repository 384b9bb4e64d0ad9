package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Target is the Redis deployment a Suite runs on.
type Target struct {
	// Name says what the server is, for the report ("redis-server on
	// 127.0.0.1:6379"); its Redis version is read from INFO.
	Name string
	// Miniredis marks the embedded server: its figures show behaviour, not
	// speed, and every output says so.
	Miniredis bool
	// RTT, when set, is the delay each way of the DelayProxy every client
	// reaches the server through: a network's round trip on loopback.
	// The proxy runs in the bench process, so CPU figures are n/a.
	RTT time.Duration
	// NewClient opens a new client, as another process would. Every worker
	// gets its own; the harness closes them.
	NewClient func() redis.UniversalClient
	// URL, when set, is where a process of its own reaches the server
	// (redis://host:port): the semaphore scenario then measures the permits
	// a SIGKILLed holder leaks (see measureLeak). Empty leaves that n/a.
	URL string
	// Reset, when set, runs before every run, e.g. FLUSHALL on a server the
	// benchmark owns. Runs use distinct key prefixes either way.
	Reset func(ctx context.Context) error
	// Replicated, when set, is where the replicated scenarios
	// (KindReplicated) run: a master of its own with one replica, reached
	// as this target is (through the same delay, and the replica too).
	// Without it a Suite refuses those scenarios.
	Replicated *Target
	// Nodes, when set, open clients on independent servers, in order, for
	// the quorum scenarios, which run on the first Scenario.Nodes of
	// them; NewClient opens one on the first.
	Nodes []func() redis.UniversalClient
}

// Suite runs every algorithm on every scenario, one after the other, on
// one target, in rounds.
type Suite struct {
	Target     Target
	Algorithms []Algorithm
	Scenarios  []Scenario
	// Rounds is how many times every algorithm runs every scenario; 0 is 1.
	// Round r runs the algorithms in their order rotated by r, so that no
	// algorithm always runs first, or right after the same one.
	Rounds int
	// Progress, when set, gets a line as each run ends.
	Progress io.Writer
}

// Run runs the suite and reports, per scenario and algorithm, the rounds
// combined: medians, the spread of acq/s, and counts over all rounds.
func (s Suite) Run(ctx context.Context) (Report, error) {
	admin := s.Target.NewClient()
	defer admin.Close()
	for _, sc := range s.Scenarios { // a bad one fails now, not after the others ran
		if err := sc.validate(); err != nil {
			return Report{}, err
		}
		if sc.Nodes > len(s.Target.Nodes) {
			return Report{}, fmt.Errorf("bench: scenario %q needs %d nodes, the target has %d", sc.Name, sc.Nodes, len(s.Target.Nodes))
		}
	}
	replicated, err := s.replicatedAdmin()
	if err != nil {
		return Report{}, err
	}
	defer closeClient(replicated)
	rounds := max(s.Rounds, 1)
	report := Report{Meta: newMeta(ctx, admin, s.Target, s.Scenarios, s.Algorithms, rounds)}
	runs := map[[2]string][]Result{} // by scenario and algorithm
	progress := newProgress(s, rounds)
	for round := range rounds {
		for _, sc := range s.Scenarios {
			for _, algo := range rotate(s.Algorithms, round) {
				if !algo.serves(sc.Kind) {
					continue
				}
				t, on := s.Target, admin
				if sc.Kind == KindReplicated { // replicatedAdmin checked s.Target.Replicated
					t, on = *s.Target.Replicated, replicated
				}
				if t.Reset != nil {
					if err := t.Reset(ctx); err != nil {
						return report, fmt.Errorf("bench: reset: %w", err)
					}
				}
				r, err := runOne(ctx, t, on, algo, sc)
				if err != nil {
					return report, fmt.Errorf("bench: %s on %s: %w", algo.Name, sc.Name, err)
				}
				key := [2]string{sc.Name, algo.Name}
				runs[key] = append(runs[key], r)
				progress.line(round, r)
			}
		}
	}
	for _, sc := range s.Scenarios {
		for _, algo := range s.Algorithms {
			if !algo.serves(sc.Kind) {
				continue
			}
			r := combine(runs[[2]string{sc.Name, algo.Name}])
			if sc.Name == semaphore && s.Target.URL != "" { // once per contestant, not per scenario of the kind
				leaked, err := measureLeak(ctx, s.Target, algo, sc)
				if err != nil {
					return report, fmt.Errorf("bench: %s on %s: leak: %w", algo.Name, sc.Name, err)
				}
				r.PermitsLeaked = &leaked
				if s.Progress != nil {
					fmt.Fprintf(s.Progress, "%s  %s: %d permit(s) leaked by a holder of %d SIGKILLed, after its lease\n",
						sc.Name, algo.Name, leaked, leakHeld)
				}
			}
			report.Results = append(report.Results, r)
		}
	}
	return report, s.measureScripts(ctx, admin, &report)
}

// measureScripts adds to report the ScriptCost of each algorithm, for each
// kind of the suite's scenarios it serves but the replicated, whose
// scripts are baton's own.
func (s Suite) measureScripts(ctx context.Context, admin redis.UniversalClient, report *Report) error {
	for _, algo := range s.Algorithms {
		var kinds []Kind
		for _, sc := range s.Scenarios {
			if algo.serves(sc.Kind) && sc.Kind != KindReplicated && !slices.Contains(kinds, sc.Kind) {
				kinds = append(kinds, sc.Kind)
			}
		}
		for _, k := range kinds {
			costs, err := measureScripts(ctx, s.Target, admin, algo, k)
			if err != nil {
				return fmt.Errorf("bench: %s: script cost: %w", algo.Name, err)
			}
			report.Scripts = append(report.Scripts, costs...)
		}
	}
	return nil
}

// Runs is how many runs Run makes: each scenario with each algorithm that
// serves its kind, in every round.
func (s Suite) Runs() int {
	n := 0
	for _, sc := range s.Scenarios {
		for _, a := range s.Algorithms {
			if a.serves(sc.Kind) {
				n++
			}
		}
	}
	return n * max(s.Rounds, 1)
}

// rotate returns items starting at index by, wrapping around.
func rotate[T any](items []T, by int) []T {
	if len(items) == 0 {
		return nil
	}
	by %= len(items)
	return append(slices.Clone(items[by:]), items[:by]...)
}

// progress prints one aligned line per run, whatever the counts and names:
// within 100 columns for the standard scenarios and algorithms, rounds
// below 10 and up to 999 runs.
type progress struct {
	w                        io.Writer
	done, total, rounds      int
	countW, scenarioW, algoW int
}

func newProgress(s Suite, rounds int) *progress {
	p := &progress{w: s.Progress, rounds: rounds, total: s.Runs()}
	p.countW = len(strconv.Itoa(p.total))
	for _, sc := range s.Scenarios {
		p.scenarioW = max(p.scenarioW, len(sc.Name))
	}
	for _, a := range s.Algorithms {
		p.algoW = max(p.algoW, len(a.Name))
	}
	return p
}

func (p *progress) line(round int, r Result) {
	p.done++
	if p.w == nil {
		return
	}
	fmt.Fprintf(p.w, "[%*d/%d] r%*d/%d  %-*s  %-*s %7.0f acq/s  wait p99 %6s  %d violations\n",
		p.countW, p.done, p.total, len(strconv.Itoa(p.rounds)), round+1, p.rounds, p.scenarioW, r.Scenario,
		p.algoW, r.Algorithm, r.AcqPerSec, short(r.WaitP99), r.Violations)
}
