package bench

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/redis/go-redis/v9"
)

// Scenario is one workload: Workers loop acquire, hold, release, think, each
// on its own Redis client as separate processes would, over Names lock names
// picked at random, for Duration.
type Scenario struct {
	Name     string
	Workers  int
	Hold     time.Duration
	Think    time.Duration
	Names    int
	Duration time.Duration
}

// DefaultDuration is how long each scenario runs for each algorithm by
// default: 16 runs then fit in a minute.
const DefaultDuration = 3 * time.Second

// Scenarios returns the standard workloads, each running for d.
func Scenarios(d time.Duration) []Scenario {
	return []Scenario{
		// One round trip to take, one to give back: the floor.
		{Name: "uncontended", Workers: 1, Names: 1, Duration: d},
		// Waiters queue behind a short critical section.
		{Name: "hot-key", Workers: 8, Hold: time.Millisecond, Names: 1, Duration: d},
		// Every release is raced for at once.
		{Name: "storm", Workers: 32, Names: 1, Duration: d},
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
	return fmt.Sprintf("%s: %d workers, hold %v, think %v, %d names, %v", s.Name, s.Workers, s.Hold, s.Think, s.Names, s.Duration)
}

// Target is the Redis deployment a Suite runs on.
type Target struct {
	// NewClient opens a new client, as another process would. Every worker
	// gets its own; the harness closes them.
	NewClient func() redis.UniversalClient
	// Reset, when set, runs before every run, e.g. FLUSHALL on a server the
	// benchmark owns. Runs use distinct key prefixes either way.
	Reset func(ctx context.Context) error
}

// Suite runs every algorithm on every scenario, one after the other, on
// one target.
type Suite struct {
	Target     Target
	Algorithms []Algorithm
	Scenarios  []Scenario
	// Progress, when set, gets a line as each run ends.
	Progress io.Writer
}

// Run runs the suite, scenario by scenario, and returns one Result per run.
func (s Suite) Run(ctx context.Context) ([]Result, error) {
	admin := s.Target.NewClient()
	defer admin.Close()
	for _, sc := range s.Scenarios { // a bad one fails now, not after the others ran
		if err := sc.validate(); err != nil {
			return nil, err
		}
	}
	results := make([]Result, 0, len(s.Scenarios)*len(s.Algorithms))
	for _, sc := range s.Scenarios {
		if s.Progress != nil {
			fmt.Fprintln(s.Progress, sc)
		}
		for _, algo := range s.Algorithms {
			if s.Target.Reset != nil {
				if err := s.Target.Reset(ctx); err != nil {
					return results, fmt.Errorf("bench: reset: %w", err)
				}
			}
			r, err := runOne(ctx, s.Target, admin, algo, sc)
			if err != nil {
				return results, fmt.Errorf("bench: %s on %s: %w", algo.Name, sc.Name, err)
			}
			results = append(results, r)
			if s.Progress != nil {
				fmt.Fprintf(s.Progress, "  [%d/%d] %-13s %8.0f acq/s  wait p99 %-8s  violations %d\n",
					len(results), cap(results), algo.Name, r.AcqPerSec, short(r.WaitP99), r.Violations)
			}
		}
	}
	return results, nil
}
