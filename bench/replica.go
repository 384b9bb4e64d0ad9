package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/rlock"
)

// The contestants of the replicated scenarios: baton with replica
// acknowledgements on, as the default has them where the master has a
// replica (1 acknowledgement within rlock.DefaultReplicaAckTimeout), and
// off.
const (
	AcksOnName  = "baton-acks-on"
	AcksOffName = "baton-acks-off"
)

// The replicated scenarios' names.
const (
	acksUncontend = "acks-uncontended"
	acksHotKey    = "acks-hot-key"
	acksHandoff   = "acks-idle-handoff"
)

// ackProbes is how many acknowledgement round trips, and as many PINGs,
// measureAck times before each run of a replicated scenario.
const ackProbes = 21

// ReplicaScenarios returns the workloads of a master with one replica,
// each running for d: the uncontended Lock+Unlock, the hot key and the
// idle hand-off of Scenarios, whose contestants are ReplicaAlgorithms.
func ReplicaScenarios(d time.Duration) []Scenario {
	return []Scenario{
		{Name: acksUncontend, Kind: KindReplicated, Workers: 1, Names: 1, Duration: d},
		{Name: acksHotKey, Kind: KindReplicated, Workers: 8, Hold: time.Millisecond, Names: 1, Duration: d},
		{Name: acksHandoff, Kind: KindReplicated, Workers: 2, Hold: 2 * time.Millisecond, Names: 1, Duration: d, HolderPings: true},
	}
}

// ReplicaAlgorithms returns the contestants of the replicated scenarios:
// baton with replica acknowledgements on and off.
func ReplicaAlgorithms() []Algorithm {
	return []Algorithm{
		{Name: AcksOffName, Kind: KindReplicated, New: newBaton(rlock.WithReplicaAcks(0, 0))},
		{Name: AcksOnName, Kind: KindReplicated, New: newBaton(rlock.WithReplicaAcks(1, rlock.DefaultReplicaAckTimeout))},
	}
}

// replicatedAdmin is a client of the target's replicated master, for
// INFO and the pinger, or nil when the target has none. A replicated
// scenario without a replicated target is an error.
func (s Suite) replicatedAdmin() (redis.UniversalClient, error) {
	switch {
	case s.Target.Replicated != nil:
		return s.Target.Replicated.NewClient(), nil
	case slices.ContainsFunc(s.Scenarios, func(sc Scenario) bool { return sc.Kind == KindReplicated }):
		return nil, fmt.Errorf("bench: the replicated scenarios need a master with a replica: %s has none", s.Target.Name)
	}
	return nil, nil
}

// closeClient closes rdb, if any.
func closeClient(rdb redis.UniversalClient) {
	if rdb != nil {
		_ = rdb.Close()
	}
}

// ackRoundTrip is what measureAck found: the median round trip of a write
// acknowledged by the replica, and of a PING on the same client.
type ackRoundTrip struct{ ack, ping time.Duration }

// measureAck times, on rdb, ackProbes PINGs and as many pipelines of a
// SET and a WAIT for one replica, alternately: what an acknowledgement
// costs a client, the master's round trip plus the replica's lag.
func measureAck(ctx context.Context, rdb redis.UniversalClient, key string) (ackRoundTrip, error) {
	var acks, pings []time.Duration
	for range ackProbes {
		start := time.Now()
		if err := rdb.Ping(ctx).Err(); err != nil {
			return ackRoundTrip{}, err
		}
		pings = append(pings, time.Since(start))
		start = time.Now()
		pipe := rdb.Pipeline()
		pipe.Set(ctx, key, 1, 10*time.Second)
		wait := pipe.Do(ctx, "wait", 1, rlock.DefaultReplicaAckTimeout.Milliseconds())
		if _, err := pipe.Exec(ctx); err != nil {
			return ackRoundTrip{}, err
		}
		if n, _ := wait.Int64(); n < 1 {
			return ackRoundTrip{}, errors.New("bench: the replica did not acknowledge a write")
		}
		acks = append(acks, time.Since(start))
	}
	return ackRoundTrip{ack: median(acks), ping: median(pings)}, nil
}

// acksTarget judges, on scenario, what replica acknowledgements change
// (AcksOnName against AcksOffName in the same run) with judge.
func acksTarget(results []Result, scenario, target string, judge func(on, off Result) (status, detail string)) Check {
	var off *Result
	for i, r := range results {
		if r.Scenario == scenario && r.Algorithm == AcksOffName {
			off = &results[i]
		}
	}
	if off == nil {
		return nothingToCompare(scenario, target)
	}
	return singleOf(results, scenario, AcksOnName, target, func(on Result) (string, string) { return judge(on, *off) })
}

// acksHotKeyTarget judges the hot key's acq/s with acknowledgements
// against without.
func acksHotKeyTarget(results []Result) Check {
	return acksTarget(results, acksHotKey, fmt.Sprintf("acq/s with acks ≥ %.1f× without", acksHotShare),
		func(on, off Result) (string, string) {
			if off.AcqPerSec <= 0 {
				return "SKIP", "no acquisition without acks"
			}
			got := on.AcqPerSec / off.AcqPerSec
			return status(shown(got, 2) >= acksHotShare, fmt.Sprintf("%.0f = %.2f× %.0f; wait p99 %s against %s",
				on.AcqPerSec, got, off.AcqPerSec, short(on.WaitP99), short(off.WaitP99)))
		})
}

// acksUncontendedTarget judges what acknowledgements add to an
// uncontended Lock (its wait p50 with them less without; Unlock waits for
// none) against one acknowledgement's round trip, a PING plus the
// replica's lag: the mean of the two runs' measureAck figures, each timed
// before its own run.
func acksUncontendedTarget(results []Result) Check {
	return acksTarget(results, acksUncontend, fmt.Sprintf("acks add ≤ %.1f× (1 round trip + the replica's lag)", acksCost),
		func(on, off Result) (string, string) {
			if on.AckP50 == nil || off.AckP50 == nil || on.LagP50 == nil || off.LagP50 == nil {
				return "SKIP", "not measured"
			}
			ack, lag := (*on.AckP50+*off.AckP50)/2, (*on.LagP50+*off.LagP50)/2
			added := on.WaitP50 - off.WaitP50
			got := float64(added) / float64(ack)
			return status(shown(got, 2) <= acksCost, fmt.Sprintf("Lock p50 %s − %s = %s = %.2f× SET+WAIT %s (lag %s)",
				short(on.WaitP50), short(off.WaitP50), short(added), got, short(ack), short(lag)))
		})
}
