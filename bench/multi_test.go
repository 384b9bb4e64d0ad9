package bench

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// localRW is an RW lock in the bench process itself, shared by the workers
// of one run.
type localRW struct{ mu *sync.RWMutex }

type unlockFunc func()

func (u unlockFunc) Unlock(context.Context) error { u(); return nil }

func (l localRW) Lock(context.Context, string) (Held, error) {
	l.mu.Lock()
	return unlockFunc(l.mu.Unlock), nil
}

func (l localRW) RLock(context.Context, string) (Held, error) {
	l.mu.RLock()
	return unlockFunc(l.mu.RUnlock), nil
}

func (localRW) Close() error { return nil }

// localSemaphore is a semaphore in the bench process itself: its permits
// are tokens in a channel, collected by one acquirer at a time, so that
// two acquirers never each hold part of what they need.
type localSemaphore struct {
	tokens  chan struct{}
	collect *sync.Mutex
}

func (s localSemaphore) Acquire(ctx context.Context, _ string, n int64) (Held, error) {
	s.collect.Lock()
	defer s.collect.Unlock()
	release := unlockFunc(func() {
		for range n {
			<-s.tokens
		}
	})
	for i := range n {
		select {
		case s.tokens <- struct{}{}:
		case <-ctx.Done():
			n = i
			release()
			return nil, ctx.Err()
		}
	}
	return release, nil
}

func (localSemaphore) Close() error { return nil }

// A Suite runs each scenario with the algorithms that have a constructor
// for its kind, and only those: the plain lock's peers never run an RW or
// semaphore scenario. The RW figures are the reads' and the writes' apart.
func TestSuiteRunsEachScenarioWithTheAlgorithmsOfItsKind(t *testing.T) {
	target, stop, err := Embedded()
	require.NoError(t, err)
	defer stop()
	lock := make(chanLocker, 1)
	rw := localRW{&sync.RWMutex{}}
	sem := localSemaphore{tokens: make(chan struct{}, 4), collect: &sync.Mutex{}}
	algos := []Algorithm{
		{Name: "lock", New: func(Env) (Locker, error) { return lock, nil }},
		{Name: "rw", NewRW: func(Env) (RWLocker, error) { return rw, nil }},
		{Name: "sem", NewSemaphore: func(e Env) (PermitLocker, error) {
			require.EqualValues(t, 4, e.Permits, "the scenario's size")
			return sem, nil
		}},
	}
	d := 100 * time.Millisecond
	scenarios := []Scenario{Scenarios(d)[2], RWScenarios(d)[0], SemaphoreScenarios(d)[0]}
	var progress bytes.Buffer
	rep, err := Suite{Target: target, Algorithms: algos, Scenarios: scenarios, Progress: &progress}.Run(testCtx(t))
	require.NoError(t, err)
	require.Len(t, rep.Results, 3)
	for i, want := range [][2]string{{hotKey, "lock"}, {rwMostlyReads, "rw"}, {semaphore, "sem"}} {
		r := rep.Results[i]
		require.Equal(t, want, [2]string{r.Scenario, r.Algorithm})
		require.Zero(t, r.Violations, want)
		require.Positive(t, r.Acquisitions, want)
		require.Nil(t, r.PermitsLeaked, "no URL: no leak measure")
	}
	require.Equal(t, 3, strings.Count(progress.String(), "\n"), "one line per run, [n/3]")
	require.Contains(t, progress.String(), "[3/3]")

	locked, mostlyReads, permits := rep.Results[0], rep.Results[1], rep.Results[2]
	require.Nil(t, locked.ReadsPerSec)
	require.Nil(t, permits.WriteWaitMax)
	require.NotNil(t, mostlyReads.ReadsPerSec)
	require.Less(t, *mostlyReads.ReadsPerSec, mostlyReads.AcqPerSec, "some acquisitions were writes")
	require.Greater(t, *mostlyReads.ReadsPerSec, mostlyReads.AcqPerSec/2, "most were reads")
	require.NotNil(t, mostlyReads.ReadWaitP99)
	require.NotNil(t, mostlyReads.WriteWaitP99)
	require.GreaterOrEqual(t, *mostlyReads.WriteWaitMax, *mostlyReads.WriteWaitP99)

	var table bytes.Buffer
	require.NoError(t, WriteTable(&table, rep))
	require.Contains(t, table.String(), "\nread-write locks\n")
	require.Contains(t, table.String(), "\nsemaphores\n")
}

// The mix: a lock scenario draws nothing from the worker's generator (its
// name sequence stays the same), an RW one a write in Writes of the draws,
// weighing the whole capacity, a semaphore one 2 permits in Doubles.
func TestScenarioRequestsFollowTheMix(t *testing.T) {
	count := func(sc Scenario) (heavy int, rng *rand.Rand) {
		rng = rand.New(rand.NewPCG(1, 2))
		for range 10000 {
			r := sc.request(sc.Workers-1, rng)
			require.LessOrEqual(t, r.weight, sc.capacity())
			if r.weight > 1 {
				heavy++
				require.Equal(t, sc.Kind == KindRW, r.write)
			}
		}
		return heavy, rng
	}
	heavy, rng := count(Scenarios(time.Second)[0])
	require.Zero(t, heavy)
	require.Equal(t, rand.New(rand.NewPCG(1, 2)).Uint64(), rng.Uint64(), "nothing drawn")

	for _, sc := range slices.Concat(RWScenarios(time.Second), SemaphoreScenarios(time.Second)) {
		if sc.Writers > 0 {
			continue // fixed roles, below
		}
		heavy, _ := count(sc)
		share := sc.Writes + sc.Doubles
		require.InDelta(t, share*10000, heavy, 300, sc.Name)
	}
	admits := RWScenarios(time.Second)[2]
	heavy, rng = count(admits)
	require.Zero(t, heavy, "the last worker always reads")
	require.Equal(t, rand.New(rand.NewPCG(1, 2)).Uint64(), rng.Uint64(), "nothing drawn")
	require.Equal(t, request{weight: admits.capacity(), write: true}, admits.request(0, rng), "the first always writes")
	require.EqualValues(t, 16, RWScenarios(time.Second)[0].capacity())
	require.EqualValues(t, 4, SemaphoreScenarios(time.Second)[0].capacity())
}

func TestMultiHolderScenariosAreValidated(t *testing.T) {
	for _, sc := range AllScenarios(time.Second) {
		require.NoError(t, sc.validate(), sc.Name)
	}
	base := Scenario{Name: "x", Workers: 1, Names: 1, Duration: time.Second}
	for _, bad := range []func(*Scenario){
		func(s *Scenario) { s.Kind = "queue" },
		func(s *Scenario) { s.Kind, s.Writes = KindRW, 1.5 },
		func(s *Scenario) { s.Kind, s.Permits = KindSemaphore, 1 },
		func(s *Scenario) { s.Kind, s.Permits, s.Doubles = KindSemaphore, 4, -0.1 },
	} {
		sc := base
		bad(&sc)
		require.Error(t, sc.validate(), "%+v", sc)
	}
}

// The contestants on a real server: no read shares with a write, no more
// than the permits are held, every RW figure is measured, and the counter
// semaphore leaks the permits of a holder SIGKILLed while holding them.
func TestRWAndSemaphoreContestantsOnARealServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	target := realTarget(t)
	d := 150 * time.Millisecond
	algos := slices.Concat(Algorithms()[:1], RWAlgorithms(), SemaphoreAlgorithms())
	scenarios := slices.Concat(RWScenarios(d), SemaphoreScenarios(d))
	rep, err := Suite{Target: target, Algorithms: algos, Scenarios: scenarios}.Run(ctx)
	require.NoError(t, err)
	require.Len(t, rep.Results, len(RWScenarios(d))*len(RWAlgorithms())+2*len(SemaphoreAlgorithms()), "baton's lock runs none")
	for _, r := range rep.Results {
		name := r.Algorithm + " on " + r.Scenario
		require.Zero(t, r.Violations, name)
		require.Positive(t, r.Acquisitions, name)
		if r.Scenario == semHandoff {
			require.Nil(t, r.PermitsLeaked, "the leak is measured once, on the semaphore scenario")
			require.NotNil(t, r.WakeupsPerGrant, "%s: three workers on two permits wait", name)
			if r.Algorithm == BatonSemaphoreName {
				require.Positive(t, r.Handoffs, name)
				require.NotNil(t, r.GapPerPing, name)
			}
			continue
		}
		if r.Scenario == semaphore {
			require.NotNil(t, r.WakeupsPerGrant, name)
			require.NotNil(t, r.PermitsLeaked, name)
			switch r.Algorithm {
			case CounterSemaphoreName:
				require.EqualValues(t, leakHeld, *r.PermitsLeaked, "a counter never gets a dead holder's permits back")
			case BatonSemaphoreName:
				require.Zero(t, *r.PermitsLeaked, "a dead holder's permits return with its lease")
			}
			continue
		}
		require.NotNil(t, r.ReadsPerSec, name)
		require.NotNil(t, r.ReadWaitP99, name)
		require.NotNil(t, r.WriteWaitMax, name)
		if r.Scenario == rwAdmits && r.Algorithm == BatonRWName {
			require.NotNil(t, r.LastReadPerPing, "%s: every release of the write finds the 10 reads queued", name)
		}
	}
	var holds []string
	for _, c := range rep.Scripts {
		holds = append(holds, c.Algorithm+" "+c.Hold)
		for _, call := range []CallCost{c.Acquire, c.Release} {
			require.GreaterOrEqual(t, call.ScriptsPerCall, 1.0, "%+v", c)
			require.Positive(t, *call.UsecPerScript, "%+v", c)
			require.GreaterOrEqual(t, call.UsecPerCall, *call.UsecPerScript, "%+v", c)
		}
	}
	require.Equal(t, []string{BatonRWName + " read", BatonRWName + " write", RedissonRWName + " read", RedissonRWName + " write",
		BatonPlainName + " read", BatonPlainName + " write", BatonSemaphoreName + " permit", CounterSemaphoreName + " permit"},
		holds, "every contestant's holds, and none of baton's lock, which served no scenario")
	checks := byTarget(Targets(rep.Results))
	for _, name := range []string{"rw-9:1: longest write wait ≤ 1/10 of redisson-rw's", "rw-9:1: reads/s ≥ 3× baton-plain's"} {
		require.Contains(t, []string{"PASS", "MISS"}, checks[name].Status, "judged: %s %+v", name, checks[name])
	}
}

// Every contestant, broken by giving each worker a key prefix of its own:
// the harness must see writes sharing with reads, and permits beyond the
// size.
func TestSuiteCountsViolationsOfEveryBrokenContestant(t *testing.T) {
	target := realTarget(t)
	var workers atomic.Int64
	var broken []Algorithm
	for _, a := range slices.Concat(RWAlgorithms(), SemaphoreAlgorithms()) {
		b := a
		own := func(e Env) Env { e.Prefix += fmt.Sprintf("w%d:", workers.Add(1)); return e }
		if a.NewRW != nil {
			b.NewRW = func(e Env) (RWLocker, error) { return a.NewRW(own(e)) }
		}
		if a.NewSemaphore != nil {
			b.NewSemaphore = func(e Env) (PermitLocker, error) { return a.NewSemaphore(own(e)) }
		}
		broken = append(broken, b)
	}
	d := 150 * time.Millisecond
	rep, err := Suite{Target: target, Algorithms: broken, Scenarios: slices.Concat(RWScenarios(d)[1:], SemaphoreScenarios(d))}.Run(testCtx(t))
	require.NoError(t, err)
	for _, r := range rep.Results {
		require.Positive(t, r.Violations, "%s on %s: every worker alone", r.Algorithm, r.Scenario)
	}
}

// The holder of the leak measure: a process of the test binary, which
// takes its permits and is killed holding them.
func TestLeakHolderIsKilledHoldingItsPermits(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	spec := holderSpec{Algorithm: CounterSemaphoreName, URL: "redis://" + srv.Addr, Prefix: "leak:", Name: "s", Permits: 4}
	require.NoError(t, killHolder(ctx, exe, spec))
	require.Equal(t, "2", srv.Admin().Get(ctx, "leak:s").Val(), "2 of 4 taken, never given back")

	spec.Algorithm = "no-such"
	require.ErrorContains(t, killHolder(ctx, exe, spec), `unknown algorithm "no-such"`)
}

// Wake-ups per grant: counted by the waiters, or, for a PermitLocker that
// counts none itself, by the server's PUBLISH and SPUBLISH calls; n/a
// without a grant, or without commandstats where the server counts.
func TestWakeupsPerGrant(t *testing.T) {
	var counted WakeCounts
	require.Nil(t, counted.perGrant(nil), "no grant")
	counted.Grants.Add(4)
	counted.Wakeups.Add(10)
	require.InDelta(t, 2.5, *counted.perGrant(map[string]int64{"publish": 99}), 1e-9, "the waiters' own count")

	var published WakeCounts
	published.ByPublish.Store(true)
	published.Grants.Add(4)
	require.Nil(t, published.perGrant(nil), "no commandstats")
	require.InDelta(t, 1.25, *published.perGrant(map[string]int64{"publish": 3, "spublish": 2, "evalsha": 9}), 1e-9)
}
