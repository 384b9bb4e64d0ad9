package bench

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/batonlock/baton/rlock"
)

// minQuorumNodes is the fewest nodes a quorum scenario may have: with
// fewer, a majority is every node, and one lost node stops the lock.
const minQuorumNodes = 3

// quorumHold names the quorum lock's hold in the server time per call,
// which is the first node's share: one node of minQuorumNodes.
const quorumHold = "lock, 1 node"

// QuorumSizes are the numbers of independent servers the quorum scenarios
// run on; MaxQuorumNodes, the largest, is how many a quorum run starts.
func QuorumSizes() []int { return []int{3, 5} }

// MaxQuorumNodes is the largest of QuorumSizes.
const MaxQuorumNodes = 5

// redsyncRetry1ms is the redsync variant with a 1 ms retry delay: the
// yardstick of the quorum scenarios' wait targets.
const redsyncRetry1ms = "redsync-1ms"

// QuorumScenarios returns, for each of QuorumSizes, the uncontended
// Lock+Unlock, the hot key and the storm on one lock across that many
// independent servers, each running for d. Their names end in -q and the
// number of nodes.
func QuorumScenarios(d time.Duration) []Scenario {
	var out []Scenario
	for _, n := range QuorumSizes() {
		for _, sc := range Scenarios(d) {
			if sc.Name == uncontend || sc.Name == hotKey || sc.Name == storm {
				sc.Name, sc.Kind, sc.Nodes = quorumScenario(sc.Name, n), KindQuorum, n
				out = append(out, sc)
			}
		}
	}
	return out
}

// QuorumRTTScenarios names the quorum scenarios a run with a delay runs by
// default: the uncontended and the hot key of each size. In the storm, 32
// workers' round trips through a delay proxy per node measure the
// proxies, which run in the bench process (on 2 cores, PINGs of 40-90 ms
// there against 2 ms in the others).
func QuorumRTTScenarios() []string {
	var out []string
	for _, n := range QuorumSizes() {
		out = append(out, quorumScenario(uncontend, n), quorumScenario(hotKey, n))
	}
	return out
}

// quorumScenario is the name of scenario on n nodes.
func quorumScenario(scenario string, n int) string { return scenario + "-q" + strconv.Itoa(n) }

// QuorumAlgorithms returns the contestants of the quorum scenarios, in
// table order: baton's quorum mode, and redsync (Redlock) with its
// defaults and with a 1 ms retry delay, on one pool per node.
func QuorumAlgorithms() []Algorithm {
	return []Algorithm{
		{Name: BatonName, Kind: KindQuorum, New: newBatonQuorum},
		{Name: "redsync", Kind: KindQuorum, New: newRedsync()},
		{Name: redsyncRetry1ms, Kind: KindQuorum, New: newRedsync(time.Millisecond)},
	}
}

// newBatonQuorum is rlock's quorum mode on the worker's clients of the
// nodes, with its defaults and the run's key prefix.
func newBatonQuorum(e Env) (Locker, error) {
	c, err := rlock.NewQuorum(e.Nodes, rlock.WithKeyPrefix(e.Prefix))
	if err != nil {
		return nil, err
	}
	return batonLocker{c}, nil
}

// QuorumTargets judges baton's quorum mode on the hot key and the storm of
// each quorum size, against redsync in the same run, as the issue sets
// them: wait p99 at most a third of redsync-1ms's (even where redsync's
// defaults, whose acquisitions are mostly one worker's with no wait, have
// a lower p99), acq/s at least the fastest variant's, and fairness at
// least stormFairness.
func QuorumTargets(results []Result) []Check {
	var checks []Check
	for _, n := range QuorumSizes() {
		for _, sc := range []string{hotKey, storm} {
			name := quorumScenario(sc, n)
			checks = append(checks,
				waitAgainst(results, name, BatonName, hotWaitRatio, redsyncRetry1ms),
				compare(results, name, BatonName, "acq/s ≥ every redsync's", acqPerSec, nil, func(b, best Result) (string, string) {
					return status(shown(b.AcqPerSec, 0) >= shown(best.AcqPerSec, 0),
						fmt.Sprintf("baton %.0f, %s %.0f", b.AcqPerSec, best.Algorithm, best.AcqPerSec))
				}),
				fairnessTarget(results, name, BatonName, stormFairness))
		}
	}
	return checks
}

// QuorumRoundTwo says, for each quorum size the run measured uncontended,
// what the token's second round costs baton's Lock, against two
// yardsticks of one round: the run's PING p50 (a PING sent to every node
// at once, timed until the last answers), and the Lock p50 of redsync-1ms
// in the same run, a SET NX sent to every node at once. Each line gives
// baton's uncontended Lock p50 less each, in at most 98 columns (the
// report indents it by 2): both differences may be negative (on a loaded
// machine the PING's p50 was above the Lock's), and each value takes up
// to 6.
func QuorumRoundTwo(results []Result) []string {
	var lines []string
	for _, n := range QuorumSizes() {
		name := quorumScenario(uncontend, n)
		i := slices.IndexFunc(results, func(r Result) bool { return r.Scenario == name && r.Algorithm == BatonName })
		if i < 0 {
			continue
		}
		b := results[i]
		line := fmt.Sprintf("%s: baton Lock p50 %s − PING %s = %s", name, short(b.WaitP50), short(b.PingP50), signed(b.WaitP50-b.PingP50))
		if j := slices.IndexFunc(results, func(r Result) bool { return r.Scenario == name && r.Algorithm == redsyncRetry1ms }); j >= 0 {
			r := results[j]
			line += fmt.Sprintf("; − %s Lock %s = %s", r.Algorithm, short(r.WaitP50), signed(b.WaitP50-r.WaitP50))
		}
		lines = append(lines, line)
	}
	return lines
}

// signed is short(d) with its sign.
func signed(d time.Duration) string {
	if d < 0 {
		return "−" + short(-d)
	}
	return short(d)
}
