package bench

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
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
	// Kind is what the workers take: a lock (the zero Kind), an RW lock's
	// read or write hold, a semaphore's permits, or a lock on a master with
	// a replica.
	Kind Kind `json:"kind,omitempty"`
	// Writes is an RW scenario's share of write holds (0.1 for
	// reads:writes 9:1); every other acquisition is a read.
	Writes float64 `json:"writes,omitempty"`
	// Writers, when set, fixes the RW scenario's roles instead: the first
	// Writers workers always write, the others always read, and every
	// write's release is timed to the last read it admits (Result.LastReadP50).
	Writers int `json:"writers,omitempty"`
	// Permits is a semaphore scenario's size; Doubles is the share of its
	// requests that ask for 2 permits, the others ask for 1.
	Permits int64   `json:"permits,omitempty"`
	Doubles float64 `json:"doubles,omitempty"`
	// Nodes is a quorum scenario's number of independent servers: its
	// workers take one lock across the first Nodes of Target.Nodes.
	Nodes int `json:"nodes,omitempty"`
	// SetMin and SetMax bound a multi-lock scenario's sets: each
	// acquisition takes a set of SetMin to SetMax names, drawn at random
	// and in a random order, the order its caller passes them in.
	SetMin int `json:"set_min,omitempty"`
	SetMax int `json:"set_max,omitempty"`
}

// Kind is the kind of resource a scenario's workers take; an Algorithm
// serves the kinds it has a constructor for.
type Kind string

// The kinds of resource.
const (
	KindLock      Kind = ""          // a plain lock: one holder
	KindRW        Kind = "rw"        // reads share, a write holds alone
	KindSemaphore Kind = "semaphore" // Permits permits, held by weight
	// KindReplicated is a plain lock on a master with one replica
	// (Target.Replicated), taken by ReplicaAlgorithms.
	KindReplicated Kind = "replicated"
	// KindQuorum is a plain lock across Nodes servers.
	KindQuorum Kind = "quorum"
	// KindMulti is a set of plain locks, all or none.
	KindMulti Kind = "multi"
)

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

// The shared-resource scenarios' names.
const (
	rwMostlyReads = "rw-9:1"
	rwEven        = "rw-1:1"
	semaphore     = "semaphore"
	semHandoff    = "sem-idle-handoff"
	rwAdmits      = "rw-write-admits-10"
)

// RWScenarios returns the read-write workloads, each running for d: 16
// workers on one RW lock, holding 1 ms, with reads:writes 9:1 and 1:1; and
// a write's release admitting 10 queued reads.
func RWScenarios(d time.Duration) []Scenario {
	return []Scenario{
		{Name: rwMostlyReads, Kind: KindRW, Workers: 16, Hold: time.Millisecond, Names: 1, Writes: 0.1, Duration: d},
		{Name: rwEven, Kind: KindRW, Workers: 16, Hold: time.Millisecond, Names: 1, Writes: 0.5, Duration: d},
		// One writer and 10 readers, holding 2 ms each: a read asked for
		// while the write waits queues behind it (in a phase-fair lock), so
		// each write's release finds the 10 reads queued and admits them
		// at once.
		{Name: rwAdmits, Kind: KindRW, Workers: 11, Writers: 1, Hold: 2 * time.Millisecond, Names: 1, Duration: d},
	}
}

// SemaphoreScenarios returns the semaphore workloads, each running for d:
// 32 workers on one semaphore of 4 permits, asking for 1 (80 %) or 2
// (20 %), holding 1 ms; and the semaphore's idle hand-off.
func SemaphoreScenarios(d time.Duration) []Scenario {
	return []Scenario{
		{Name: semaphore, Kind: KindSemaphore, Workers: 32, Hold: time.Millisecond, Names: 1, Permits: 4, Doubles: 0.2, Duration: d},
		// The idle hand-off of the lock, on a semaphore: three processes
		// asking for 1 of 2 permits, so that each release finds the third
		// parked in Acquire and admits it alone. The gap is from that
		// release to the grant, against a PING of the same loop. Holds end
		// 2 ms after they start, and the two holders' releases mostly fall
		// apart; where two fall together, the gap runs from the later one,
		// which shortens it.
		{Name: semHandoff, Kind: KindSemaphore, Workers: 3, Hold: 2 * time.Millisecond, Names: 1, Permits: 2, Duration: d, HolderPings: true},
	}
}

// AllScenarios returns the lock, read-write, semaphore, replicated and
// multi-lock workloads, in that order, each running for d.
func AllScenarios(d time.Duration) []Scenario {
	return slices.Concat(Scenarios(d), RWScenarios(d), SemaphoreScenarios(d), ReplicaScenarios(d), MultiScenarios(d))
}

func (s Scenario) validate() error {
	if s.Workers < 1 || s.Names < 1 || s.Duration <= 0 || s.Hold < 0 || s.Think < 0 {
		return fmt.Errorf("bench: scenario %q: need workers ≥ 1, names ≥ 1, duration > 0, hold and think ≥ 0", s.Name)
	}
	if s.Nodes != 0 && s.Kind != KindQuorum {
		return fmt.Errorf("bench: scenario %q: only a quorum scenario has nodes", s.Name)
	}
	switch s.Kind {
	case KindLock, KindReplicated:
	case KindRW:
		if s.Writes < 0 || s.Writes > 1 || s.Writers < 0 || s.Writers >= s.Workers {
			return fmt.Errorf("bench: scenario %q: writes is a share, from 0 to 1, and writers fewer than workers", s.Name)
		}
	case KindSemaphore:
		if s.Permits < 2 || s.Doubles < 0 || s.Doubles > 1 {
			return fmt.Errorf("bench: scenario %q: need permits ≥ 2 and doubles a share, from 0 to 1", s.Name)
		}
	case KindQuorum:
		if s.Nodes < minQuorumNodes {
			return fmt.Errorf("bench: scenario %q: a quorum needs %d nodes or more", s.Name, minQuorumNodes)
		}
	case KindMulti:
		if s.SetMin < 1 || s.SetMin > s.SetMax || s.SetMax > s.Names {
			return fmt.Errorf("bench: scenario %q: need 1 ≤ set min ≤ set max ≤ names", s.Name)
		}
	default:
		return fmt.Errorf("bench: scenario %q: unknown kind %q", s.Name, s.Kind)
	}
	return nil
}

// request is what one acquisition asks for: its weight out of the name's
// capacity (see capacity), and for an RW lock whether it is a write.
type request struct {
	weight int64
	write  bool
}

// capacity is the weight a name's holders may hold together: 1 for a
// lock; for an RW lock the workers, since a read weighs 1 and a write all
// of it; for a semaphore its permits.
func (s Scenario) capacity() int64 {
	switch s.Kind {
	case KindRW:
		return int64(s.Workers)
	case KindSemaphore:
		return s.Permits
	}
	return 1
}

// draw draws worker's next acquisition with rng: the names it takes, as
// indices of the run's names in the order its caller passes them, and
// what it asks of each. A multi-lock scenario draws a set; the others one
// name (none drawn when there is only one), then the request.
func (s Scenario) draw(worker int, rng *rand.Rand) (names []int, req request) {
	if s.Kind == KindMulti {
		k := s.SetMin + rng.IntN(s.SetMax-s.SetMin+1)
		return rng.Perm(s.Names)[:k], request{weight: 1}
	}
	i := 0
	if s.Names > 1 {
		i = rng.IntN(s.Names)
	}
	return []int{i}, s.request(worker, rng)
}

// request draws worker's next acquisition from the scenario's mix with
// rng. A lock scenario, or one with fixed writers, draws nothing, so its
// workers' name sequences stay as they were.
func (s Scenario) request(worker int, rng *rand.Rand) request {
	switch {
	case s.Kind == KindRW && s.Writers > 0:
		if worker < s.Writers {
			return request{weight: s.capacity(), write: true}
		}
	case s.Kind == KindRW:
		if rng.Float64() < s.Writes {
			return request{weight: s.capacity(), write: true}
		}
	case s.Kind == KindSemaphore:
		if rng.Float64() < s.Doubles {
			return request{weight: 2}
		}
	}
	return request{weight: 1}
}

// String describes the workload in one line.
func (s Scenario) String() string {
	line := fmt.Sprintf("%s: %d workers, hold %v, think %v, %d names, %v", s.Name, s.Workers, s.Hold, s.Think, s.Names, s.Duration)
	if s.HolderPings {
		line += ", holders PING"
	}
	if s.Nodes > 0 {
		line += fmt.Sprintf(", one lock on %d nodes", s.Nodes)
	}
	switch s.Kind {
	case KindRW:
		if s.Writers > 0 {
			line += fmt.Sprintf(", RW lock, %d writer(s)", s.Writers)
			break
		}
		line += fmt.Sprintf(", RW lock, %.0f%% writes", 100*s.Writes)
	case KindSemaphore:
		line += fmt.Sprintf(", semaphore of %d, %.0f%% ask for 2", s.Permits, 100*s.Doubles)
	case KindMulti:
		line += fmt.Sprintf(", sets of %d–%d names", s.SetMin, s.SetMax)
	}
	return line
}
