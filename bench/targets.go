package bench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"
	"time"
)

// Check is one performance target evaluated on the results of one run.
type Check struct {
	Target string // what baton must do
	Status string // "PASS", "MISS", or "SKIP" when the run lacks the results
	Detail string // the figures it was judged on, as shown
}

// The targets, from the issue on passing the lock (FIFO hand-off). A figure
// is judged as the detail shows it: fairness with three decimals, ratios
// with two.
const (
	hotWaitRatio      = 3.0  // hot-key wait p99 at most a third of the best's
	hotFairness       = 0.9  // least/most served worker on the hot key
	hotThroughput     = 1.1  // hot-key acq/s at least 1.1× the best's
	stormWaitRatio    = 3.0  // storm wait p99 at most a third of the best's
	stormFairness     = 0.8  // least/most served worker in the storm
	gapPerPingTarget  = 1.5  // hand-off gap p50 in PING round trips
	contendedCommands = 12.0 // server commands per contended acquisition
	uncontendedUsec   = 1.5  // server µs per Lock+Unlock against SET NX PX + compare-and-delete
	uncontendedTrips  = 2.0  // one round trip to Lock, one to Unlock
	oneOffAllowance   = 1.01 // for script loads and dials amortised over the run
)

// The scenarios the targets are set on.
const (
	hotKey      = "hot-key"
	storm       = "storm"
	uncontend   = "uncontended"
	idleHandoff = "idle-handoff"
)

// pairAlgorithms are the recipes whose uncontended acquisition is exactly
// one SET NX PX and one compare-and-delete script: the server-time yardstick.
var pairAlgorithms = []string{"poll-10ms", "poll-1ms", "poll-backoff"}

// Targets judges baton against the best peer or polling recipe of the same
// run, figure by figure. The targets are meant for a real Redis.
func Targets(results []Result) []Check {
	return []Check{
		waitTarget(results, hotKey, hotWaitRatio),
		fairnessTarget(results, hotKey, hotFairness),
		compare(results, hotKey, "acq/s ≥ 1.1× the best's", acqPerSec, nil, func(b, best Result) (string, string) {
			return status(b.AcqPerSec >= hotThroughput*best.AcqPerSec, throughputDetail(b, best))
		}),
		single(results, hotKey, fmt.Sprintf("hand-off gap p50 ≤ %.1f× PING p50", gapPerPingTarget), func(b Result) (string, string) {
			if b.GapPerPing == nil || b.GapP50 == nil {
				return status(false, "no hand-off measured")
			}
			return status(shown(*b.GapPerPing, 2) <= gapPerPingTarget,
				fmt.Sprintf("gap %s = %.2f× ping %s", short(*b.GapP50), *b.GapPerPing, short(b.PingP50)))
		}),
		commandsTarget(results, hotKey),
		compare(results, storm, "acq/s ≥ the best's", acqPerSec, nil, func(b, best Result) (string, string) {
			return status(b.AcqPerSec >= best.AcqPerSec, throughputDetail(b, best))
		}),
		waitTarget(results, storm, stormWaitRatio),
		fairnessTarget(results, storm, stormFairness),
		commandsTarget(results, storm),
		compare(results, uncontend, "acq/s ≥ the best's", acqPerSec, nil, func(b, best Result) (string, string) {
			return status(b.AcqPerSec >= best.AcqPerSec, throughputDetail(b, best))
		}),
		compare(results, uncontend, fmt.Sprintf("server µs ≤ %.1f× a SET NX + unlock pair's", uncontendedUsec),
			func(r Result) float64 { return -optionalValue(r.ServerUsecPerAcq) },
			func(r Result) bool { return slices.Contains(pairAlgorithms, r.Algorithm) && r.ServerUsecPerAcq != nil },
			func(b, pair Result) (string, string) {
				if b.ServerUsecPerAcq == nil {
					return noCommandstats()
				}
				return status(shown(*b.ServerUsecPerAcq, 2) <= shown(uncontendedUsec**pair.ServerUsecPerAcq, 2),
					fmt.Sprintf("baton %.2f, %s %.2f µs/acq", *b.ServerUsecPerAcq, pair.Algorithm, *pair.ServerUsecPerAcq))
			}),
		single(results, uncontend, "one round trip per Lock and per Unlock", func(b Result) (string, string) {
			return status(b.ClientPerAcq <= uncontendedTrips*oneOffAllowance,
				fmt.Sprintf("baton %.3f client commands per Lock+Unlock", b.ClientPerAcq))
		}),
	}
}

func waitTarget(results []Result, scenario string, factor float64) Check {
	return compare(results, scenario, fmt.Sprintf("wait p99 ≤ 1/%.0f of the best's", factor),
		func(r Result) float64 { return -float64(r.WaitP99) }, nil,
		func(b, best Result) (string, string) {
			limit := time.Duration(float64(best.WaitP99) / factor)
			return status(b.WaitP99 <= limit, fmt.Sprintf("baton %s, %s %s (limit %s)",
				short(b.WaitP99), best.Algorithm, short(best.WaitP99), short(limit)))
		})
}

func fairnessTarget(results []Result, scenario string, target float64) Check {
	return single(results, scenario, fmt.Sprintf("fairness ≥ %.1f", target), func(b Result) (string, string) {
		return status(shown(b.Fairness, 3) >= target, fmt.Sprintf("baton %.3f (%d/%d)", b.Fairness, b.MinPerWorker, b.MaxPerWorker))
	})
}

func commandsTarget(results []Result, scenario string) Check {
	return single(results, scenario, fmt.Sprintf("≤ %.0f server commands per acquisition", contendedCommands), func(b Result) (string, string) {
		if b.ServerPerAcq == nil {
			return noCommandstats()
		}
		return status(shown(*b.ServerPerAcq, 2) <= contendedCommands, fmt.Sprintf("baton %.2f", *b.ServerPerAcq))
	})
}

// noCommandstats skips a target on server figures when the server has none
// (miniredis): nothing was measured to judge.
func noCommandstats() (string, string) {
	return "SKIP", "no commandstats on this server"
}

// shown rounds v to the decimals it is printed with, so that a figure shown
// as 0.700 passes a 0.7 target.
func shown(v float64, decimals int) float64 {
	p := math.Pow(10, float64(decimals))
	return math.Round(v*p) / p
}

func optionalValue(v *float64) float64 {
	if v == nil {
		return math.Inf(-1)
	}
	return *v
}

func acqPerSec(r Result) float64 { return r.AcqPerSec }

func throughputDetail(b, best Result) string {
	return fmt.Sprintf("baton %.0f, %s %.0f", b.AcqPerSec, best.Algorithm, best.AcqPerSec)
}

// single judges baton's result on scenario alone.
func single(results []Result, scenario, target string, judge func(baton Result) (status, detail string)) Check {
	c := Check{Target: scenario + ": " + target, Status: "SKIP", Detail: "no baton result"}
	for _, r := range results {
		if r.Scenario == scenario && r.Algorithm == BatonName {
			c.Status, c.Detail = judge(r)
		}
	}
	return c
}

// compare judges baton's result on scenario against the other algorithm
// (among those eligible, or all when eligible is nil) for which score is
// highest.
func compare(results []Result, scenario, target string, score func(Result) float64, eligible func(Result) bool,
	judge func(baton, best Result) (status, detail string)) Check {
	var best *Result
	for i, r := range results {
		if r.Scenario != scenario || r.Algorithm == BatonName || (eligible != nil && !eligible(r)) {
			continue
		}
		if best == nil || score(r) > score(*best) {
			best = &results[i]
		}
	}
	if best == nil {
		return Check{Target: scenario + ": " + target, Status: "SKIP", Detail: "nothing to compare with"}
	}
	return single(results, scenario, target, func(b Result) (string, string) { return judge(b, *best) })
}

func status(pass bool, detail string) (string, string) {
	if pass {
		return "PASS", detail
	}
	return "MISS", detail
}

// WriteTargets prints the checks, one per line, each line within 120
// columns.
func WriteTargets(w io.Writer, checks []Check) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range checks {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", c.Status, c.Target, c.Detail)
	}
	return tw.Flush()
}
