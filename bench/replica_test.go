package bench

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// replicatedTarget is realTarget with a replicated master of its own, as
// baton-bench's throwaway server has.
func replicatedTarget(t *testing.T) Target {
	target := realTarget(t)
	master := redistest.Start(t)
	redistest.StartReplica(t, master)
	target.Replicated = &Target{Name: "redis-server with a replica on " + master.Addr, NewClient: func() redis.UniversalClient {
		return redis.NewClient(&redis.Options{Addr: master.Addr})
	}}
	return target
}

// The replicated scenarios run on the replicated master with acks on and
// off: on, every Lock adds one pipeline, a SET and a WAIT (two client
// commands); off, none. Each run times an acknowledged write first.
func TestReplicatedScenariosOnARealServer(t *testing.T) {
	suite := Suite{Target: replicatedTarget(t), Algorithms: AllAlgorithms(), Scenarios: ReplicaScenarios(150 * time.Millisecond)}
	rep, err := suite.Run(testCtx(t))
	require.NoError(t, err)
	require.Len(t, rep.Results, 2*len(suite.Scenarios), "only the replicated scenarios' contestants run them")
	require.Empty(t, rep.Scripts, "the replicated contestants' scripts are baton's")
	for _, r := range rep.Results {
		name := requireRan(t, r)
		require.NotNil(t, r.AckP50, name)
		require.NotNil(t, r.LagP50, name)
		require.Less(t, *r.LagP50, *r.AckP50, name)
		waits := r.ServerCommands["wait"]
		switch r.Algorithm {
		case AcksOnName:
			require.GreaterOrEqual(t, waits, r.Acquisitions, "a WAIT per grant: %s", name)
		case AcksOffName:
			require.Zero(t, waits, name)
		}
		if r.Scenario == acksUncontend {
			want := map[string]float64{AcksOnName: 4, AcksOffName: 2}[r.Algorithm]
			require.InDelta(t, want, r.ClientPerAcq, 0.1, name)
		}
	}
	checks := byTarget(append(Targets(rep.Results), RTTTargets(rep.Results, RTTJudged)...))
	require.NotEqual(t, "SKIP", checks["acks-hot-key: acq/s with acks ≥ 0.8× without"].Status)
	require.NotEqual(t, "SKIP", checks["acks-uncontended: acks add ≤ 1.1× (1 round trip + the replica's lag)"].Status)
}

// A target without a replicated master cannot run the replicated
// scenarios: the suite says so before running anything.
func TestReplicatedScenariosNeedAReplica(t *testing.T) {
	suite := Suite{Target: realTarget(t), Algorithms: AllAlgorithms(), Scenarios: ReplicaScenarios(time.Second)}
	_, err := suite.Run(testCtx(t))
	require.ErrorContains(t, err, "need a master with a replica")
}

func TestAcksTargets(t *testing.T) {
	const (
		hot  = "acks-hot-key: acq/s with acks ≥ 0.8× without"
		free = "acks-uncontended: acks add ≤ 1.1× (1 round trip + the replica's lag)"
	)
	hotKeys := func(on, off float64) []Result {
		return []Result{{Algorithm: AcksOffName, Scenario: acksHotKey, AcqPerSec: off},
			{Algorithm: AcksOnName, Scenario: acksHotKey, AcqPerSec: on}}
	}
	for _, tc := range []struct {
		results      []Result
		want, detail string
	}{
		{hotKeys(800, 1000), "PASS", "800 = 0.80× 1000"},
		{hotKeys(796, 1000), "PASS", "= 0.80×"}, // judged as shown
		{hotKeys(790, 1000), "MISS", "= 0.79×"},
		{hotKeys(800, 1000)[1:], "SKIP", "nothing to compare with"},
	} {
		c := byTarget(Targets(tc.results))[hot]
		require.Equal(t, tc.want, c.Status, c.Detail)
		require.Contains(t, c.Detail, tc.detail)
	}

	// Lock p50 5ms with acks, 2.5ms without; the two runs' SET+WAIT
	// round trips average to ack.
	uncontended := func(ack time.Duration) []Result {
		onAck, offAck := ack+100*time.Microsecond, ack-100*time.Microsecond
		onLag, offLag := onAck/2, offAck/2
		return []Result{{Algorithm: AcksOffName, Scenario: acksUncontend, WaitP50: 2500 * time.Microsecond, AckP50: &offAck, LagP50: &offLag},
			{Algorithm: AcksOnName, Scenario: acksUncontend, WaitP50: 5 * time.Millisecond, AckP50: &onAck, LagP50: &onLag}}
	}
	for _, tc := range []struct {
		ack          time.Duration
		want, detail string
	}{
		{2500 * time.Microsecond, "PASS", "Lock p50 5ms − 2.5ms = 2.5ms = 1.00× SET+WAIT 2.5ms (lag 1.25ms)"},
		{2273 * time.Microsecond, "PASS", "= 1.10×"},
		{2200 * time.Microsecond, "MISS", "= 1.14×"},
	} {
		c := byTarget(RTTTargets(uncontended(tc.ack), RTTJudged))[free]
		require.Equal(t, tc.want, c.Status, c.Detail)
		require.Contains(t, c.Detail, tc.detail)
		require.Equal(t, "SKIP", byTarget(RTTTargets(uncontended(tc.ack), 0))[free].Status, "judged only through a delay proxy")
	}
}

// New serves one kind of lock scenario, its Algorithm's Kind: the lock
// contestants never run a replicated or quorum scenario, and the
// replicated and quorum contestants run only their own.
func TestEachLockContestantServesItsKindAlone(t *testing.T) {
	lockKinds := []Kind{KindLock, KindReplicated, KindQuorum}
	for kind, algos := range map[Kind][]Algorithm{
		KindLock: Algorithms(), KindReplicated: ReplicaAlgorithms(), KindQuorum: QuorumAlgorithms(),
	} {
		for _, a := range algos {
			for _, k := range lockKinds {
				require.Equal(t, k == kind, a.serves(k), "%s on a scenario of kind %q", a.Name, k)
			}
		}
	}
}
