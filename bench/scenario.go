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

// Scenario is one workload: Workers loop acquire, hold, release, think, each
// on its own Redis client as separate processes would, over Names lock names
// picked at random, for Duration.
type Scenario struct {
	Name     string        `json:"name"`
	Workers  int           `json:"workers"`
	Hold     time.Duration `json:"hold_ns"`
	Think    time.Duration `json:"think_ns"`
	Names    int           `json:"names"`
	Duration time.Duration `json:"duration_ns"`
	// HolderPings moves the PING yardstick of the hand-off gap into the
	// loop: each holder, at the end of its hold, PINGs once on its own
	// client, and no separate client pings. On an otherwise idle server
	// the PING then runs in the conditions the release that follows it
	// meets. The PINGs count as neither client nor server commands.
	HolderPings bool `json:"holder_pings,omitempty"`
}

// DefaultDuration is how long each scenario runs for each algorithm in each
// round by default: the 135 runs of three rounds then take about a minute
// and a quarter.
const DefaultDuration = 500 * time.Millisecond

// DefaultRounds is how many rounds a run has by default.
const DefaultRounds = 3

// Scenarios returns the standard workloads, each running for d.
func Scenarios(d time.Duration) []Scenario {
	return []Scenario{
		// One round trip to take, one to give back: the floor.
		{Name: uncontend, Workers: 1, Names: 1, Duration: d},
		// Two processes take turns: each release finds the other parked in
		// Lock for about the hold, 2 ms, on a server otherwise idle. The
		// gap is the hand-off itself, against a PING of the same loop. The
		// peers run it too: a poller's waiter learns of the release only
		// at its next try, and the releaser, calling Lock again at once,
		// mostly takes the lock back first; the few hand-offs and the
		// fairness show what that buys.
		{Name: idleHandoff, Workers: 2, Hold: 2 * time.Millisecond, Names: 1, Duration: d, HolderPings: true},
		// Waiters queue behind a short critical section.
		{Name: hotKey, Workers: 8, Hold: time.Millisecond, Names: 1, Duration: d},
		// Every release is raced for at once.
		{Name: storm, Workers: 32, Names: 1, Duration: d},
		// Mostly free locks, some collisions, many keys held at once.
		{Name: "many-keys", Workers: 64, Hold: time.Millisecond, Names: 1000, Duration: d},
	}
}

func (s Scenario) validate() error {
	if s.Workers < 1 || s.Names < 1 || s.Duration <= 0 || s.Hold < 0 || s.Think < 0 {
		return fmt.Errorf("bench: scenario %q: need workers ≥ 1, names ≥ 1, duration > 0, hold and think ≥ 0", s.Name)
	}
	return nil
}

// String describes the workload in one line.
func (s Scenario) String() string {
	line := fmt.Sprintf("%s: %d workers, hold %v, think %v, %d names, %v", s.Name, s.Workers, s.Hold, s.Think, s.Names, s.Duration)
	if s.HolderPings {
		line += ", holders PING"
	}
	return line
}

// Target is the Redis deployment a Suite runs on.
type Target struct {
	// Name says what the server is, for the report ("redis-server on
	// 127.0.0.1:6379"); its Redis version is read from INFO.
	Name string
	// Miniredis marks the embedded server: its figures show behaviour, not
	// speed, and every output says so.
	Miniredis bool
	// NewClient opens a new client, as another process would. Every worker
	// gets its own; the harness closes them.
	NewClient func() redis.UniversalClient
	// Reset, when set, runs before every run, e.g. FLUSHALL on a server the
	// benchmark owns. Runs use distinct key prefixes either way.
	Reset func(ctx context.Context) error
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
	}
	rounds := max(s.Rounds, 1)
	report := Report{Meta: newMeta(ctx, admin, s.Target, s.Scenarios, s.Algorithms, rounds)}
	runs := map[[2]string][]Result{} // by scenario and algorithm
	progress := newProgress(s, rounds)
	for round := range rounds {
		for _, sc := range s.Scenarios {
			for _, algo := range rotate(s.Algorithms, round) {
				if s.Target.Reset != nil {
					if err := s.Target.Reset(ctx); err != nil {
						return report, fmt.Errorf("bench: reset: %w", err)
					}
				}
				r, err := runOne(ctx, s.Target, admin, algo, sc)
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
			report.Results = append(report.Results, combine(runs[[2]string{sc.Name, algo.Name}]))
		}
	}
	return report, nil
}

// rotate returns items starting at index by, wrapping around.
func rotate[T any](items []T, by int) []T {
	if len(items) == 0 {
		return nil
	}
	by %= len(items)
	return append(slices.Clone(items[by:]), items[:by]...)
}

// progress prints one aligned line per run, whatever the counts and names.
type progress struct {
	w                        io.Writer
	done, total, rounds      int
	countW, scenarioW, algoW int
}

func newProgress(s Suite, rounds int) *progress {
	p := &progress{w: s.Progress, rounds: rounds, total: rounds * len(s.Scenarios) * len(s.Algorithms)}
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
	fmt.Fprintf(p.w, "[%*d/%d] round %*d/%d  %-*s  %-*s  %8.0f acq/s  wait p99 %7s  violations %d\n",
		p.countW, p.done, p.total, len(strconv.Itoa(p.rounds)), round+1, p.rounds, p.scenarioW, r.Scenario,
		p.algoW, r.Algorithm, r.AcqPerSec, short(r.WaitP99), r.Violations)
}
