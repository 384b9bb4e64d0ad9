package bench

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// A multi-lock scenario draws sets of SetMin to SetMax distinct names, in a
// random order, the same for every algorithm (a worker's seed); a lock
// scenario still draws one name, and none when it has only one.
func TestMultiScenarioDrawsSetsInTheCallersOrder(t *testing.T) {
	sc := MultiScenarios(time.Second)[0]
	require.NoError(t, sc.validate())
	draws := func(seed uint64) [][]int {
		rng := rand.New(rand.NewPCG(nameSeed, seed))
		var out [][]int
		for range 2000 {
			set, req := sc.draw(3, rng)
			require.Equal(t, request{weight: 1}, req)
			out = append(out, set)
		}
		return out
	}
	sets := draws(3)
	require.Equal(t, sets, draws(3), "the same seed, the same sets")
	sizes := map[int]int{}
	sorted := 0
	for _, set := range sets {
		sizes[len(set)]++
		require.Len(t, slices.Compact(slices.Sorted(slices.Values(set))), len(set), "distinct names: %v", set)
		for _, i := range set {
			require.True(t, i >= 0 && i < sc.Names)
		}
		if slices.IsSorted(set) {
			sorted++
		}
	}
	require.Len(t, sizes, sc.SetMax-sc.SetMin+1, "every size from %d to %d: %v", sc.SetMin, sc.SetMax, sizes)
	require.Less(t, sorted, len(sets)/2, "in the caller's (random) order, not sorted")

	many := Scenarios(time.Second)[4]
	rng, same := rand.New(rand.NewPCG(1, 2)), rand.New(rand.NewPCG(1, 2))
	set, _ := many.draw(0, rng)
	require.Equal(t, []int{same.IntN(many.Names)}, set, "one name, drawn as before sets existed")
	hot := Scenarios(time.Second)[2]
	set, _ = hot.draw(0, rng)
	require.Equal(t, []int{0}, set)
	require.Equal(t, same.Uint64(), rng.Uint64(), "nothing drawn for a single name")
}

func TestMultiScenariosAreValidated(t *testing.T) {
	base := MultiScenarios(time.Second)[0]
	for _, bad := range []func(*Scenario){
		func(s *Scenario) { s.SetMin = 0 },
		func(s *Scenario) { s.SetMin, s.SetMax = 4, 3 },
		func(s *Scenario) { s.SetMax = s.Names + 1 },
	} {
		sc := base
		bad(&sc)
		require.Error(t, sc.validate(), "%+v", sc)
	}
}

// firstOnly is a broken multi-lock: it locks only the first name of a set,
// in the bench process itself.
type firstOnly struct{ locks *sync.Map }

func (f firstOnly) LockAll(_ context.Context, names []string) (Held, error) {
	mu, _ := f.locks.LoadOrStore(names[0], &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	return unlockFunc(mu.(*sync.Mutex).Unlock), nil
}

func (firstOnly) Close() error { return nil }

// The recorder checks every name of a set: a multi-lock that holds only
// the first is caught.
func TestMultiScenarioCountsEveryNameOfASet(t *testing.T) {
	target, stop, err := Embedded()
	require.NoError(t, err)
	defer stop()
	broken := firstOnly{&sync.Map{}}
	algo := Algorithm{Name: "first-only", NewMulti: func(Env) (MultiLocker, error) { return broken, nil }}
	rep, err := Suite{Target: target, Algorithms: []Algorithm{algo}, Scenarios: MultiScenarios(100 * time.Millisecond)}.Run(testCtx(t))
	require.NoError(t, err)
	require.Len(t, rep.Results, 1)
	require.Positive(t, rep.Results[0].Violations)
}

// openMulti opens a multi-lock contestant on a client of its own, as one
// process would; both are closed when t ends.
func openMulti(t *testing.T, srv *redistest.Server, open func(Env) (MultiLocker, error)) MultiLocker {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	l, err := open(Env{Client: rdb, Prefix: "multi:"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close(); _ = rdb.Close() })
	return l
}

// Redisson's MultiLock holds what it has while it waits for the next lock,
// in the caller's order; when its time runs out it gives all of it back
// and starts over; once the lock it waits for is released it holds the
// set.
func TestRedissonMultiHoldsWhileWaitingAndStartsOver(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	a, b := openMulti(t, srv, newRedissonMulti), openMulti(t, srv, newRedissonMulti).(*redissonMulti)
	x, err := a.LockAll(ctx, []string{"x"})
	require.NoError(t, err)

	start := time.Now()
	held, err := b.tryLockAll(ctx, []string{"y", "x"}, 200*time.Millisecond)
	require.NoError(t, err)
	require.Nil(t, held, "x stays held")
	require.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond, "it waited for x")
	require.Zero(t, srv.Admin().Exists(ctx, "multi:y").Val(), "y given back")

	got := lockAsync(ctx, func(ctx context.Context, _ string) (Held, error) { return b.LockAll(ctx, []string{"y", "x"}) })
	require.Eventually(t, func() bool { return srv.Admin().Exists(ctx, "multi:y").Val() == 1 },
		5*time.Second, 5*time.Millisecond, "y is held while x is waited for")
	require.NoError(t, x.Unlock(ctx))
	select {
	case h := <-got:
		require.NotNil(t, h)
		require.EqualValues(t, 2, srv.Admin().Exists(ctx, "multi:x", "multi:y").Val())
		require.NoError(t, h.Unlock(ctx))
		require.Zero(t, srv.Admin().Exists(ctx, "multi:x", "multi:y").Val())
		require.ErrorIs(t, h.Unlock(ctx), errNotHeld)
	case <-time.After(5 * time.Second):
		t.Fatal("x's unlock message did not wake the MultiLock")
	}
}

// ObtainMulti takes a set all or none: with one key taken it takes none,
// and tries again until its context ends.
func TestObtainMultiTakesAllOrNone(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	a, b := openMulti(t, srv, newObtainMulti), openMulti(t, srv, newObtainMulti)
	x, err := a.LockAll(ctx, []string{"x"})
	require.NoError(t, err)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = b.LockAll(short, []string{"y", "x"})
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Zero(t, srv.Admin().Exists(ctx, "multi:"+obtainMultiTag+"y").Val(), "none taken")

	got := lockAsync(ctx, func(ctx context.Context, _ string) (Held, error) { return b.LockAll(ctx, []string{"y", "x"}) })
	require.NoError(t, x.Unlock(ctx))
	h := <-got
	require.NotNil(t, h, "taken at a retry after x's release")
	require.NoError(t, h.Unlock(ctx))
	require.ErrorIs(t, h.Unlock(ctx), errNotHeld)
}

// The multi-lock contestants on a real server: none lets two workers hold
// a name at once, baton and ObtainMulti take sets, and each acquire and
// release is measured one at a time: one script for a free set of 4 for
// baton on a single node and for ObtainMulti, one per lock for the
// MultiLock's.
func TestMultiContestantsOnARealServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rep, err := Suite{Target: realTarget(t), Algorithms: MultiAlgorithms(), Scenarios: MultiScenarios(150 * time.Millisecond)}.Run(ctx)
	require.NoError(t, err)
	require.Len(t, rep.Results, len(MultiAlgorithms()))
	for _, r := range rep.Results {
		require.Zero(t, r.Violations, r.Algorithm)
		require.Equal(t, KindMulti, r.Kind)
		require.Zero(t, r.Handoffs, "a set's wait is no one name's hand-off")
		if r.Algorithm != RedissonMultiName { // which may deadlock from the start
			require.Positive(t, r.Acquisitions)
		}
	}
	scripts := map[string][2]float64{}
	for _, c := range rep.Scripts {
		require.Equal(t, "set of 4", c.Hold)
		scripts[c.Algorithm] = [2]float64{c.Acquire.ScriptsPerCall, c.Release.ScriptsPerCall}
	}
	require.Equal(t, map[string][2]float64{BatonMultiName: {1, 1}, RedissonMultiName: {4, 4}, ObtainMultiName: {1, 1}}, scripts)
}

// The multi-lock targets judge baton-multi against the best baseline of
// the same scenario (never the plain lock's contestants) and alone.
func TestMultiLockTargets(t *testing.T) {
	ms := time.Millisecond
	results := func(p99, p50, most time.Duration, fairness float64) []Result {
		return []Result{
			{Algorithm: BatonMultiName, Scenario: multiLock, WaitP99: p99, WaitP50: p50, WaitMax: most, Fairness: fairness},
			{Algorithm: RedissonMultiName, Scenario: multiLock, WaitP99: 500 * ms},
			{Algorithm: ObtainMultiName, Scenario: multiLock, WaitP99: 75 * ms},
			{Algorithm: BatonName, Scenario: hotKey, WaitP99: ms},
		}
	}
	for _, tc := range []struct {
		name    string
		results []Result
		want    [3]string // wait p99, fairness, slowest
		detail  string
	}{
		{"all met", results(25*ms, 2*ms, 40*ms, 0.8), [3]string{"PASS", "PASS", "PASS"},
			"baton-multi 25ms, obtainmulti-1ms 75ms (limit 25ms)"},
		{"all missed", results(26*ms, 2*ms, 41*ms, 0.799), [3]string{"MISS", "MISS", "MISS"},
			"baton-multi 41ms = 20.50× p50 2ms"},
		{"no median", results(26*ms, 0, 41*ms, 0.8), [3]string{"MISS", "PASS", "SKIP"}, "no wait measured"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checks := byTarget(Targets(tc.results))
			var got [3]string
			var details string
			for i, target := range []string{"wait p99 ≤ 1/3 of the best's", "fairness ≥ 0.8", "wait max ≤ 20× wait p50"} {
				c := checks[multiLock+": "+target]
				got[i] = c.Status
				details += c.Detail + "\n"
			}
			require.Equal(t, tc.want, got, details)
			require.Contains(t, details, tc.detail)
		})
	}
}
