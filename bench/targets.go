package bench

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// Check is one performance target evaluated on the results of one run.
type Check struct {
	Target string // what baton must do
	Status string // "PASS", "MISS", or "SKIP" when the run lacks the results
	Detail string // the figures it was judged on
}

// The targets, from the issue that introduced this package.
const (
	waitRatioTarget  = 3.0  // baton's hot-key wait p99 at most a third of the best baseline's
	fairnessTarget   = 0.7  // least/most served worker on the hot key
	gapPerPingTarget = 3.0  // hand-off gap p50 in PING round trips
	uncontendedTrips = 2.0  // one round trip to Lock, one to Unlock
	oneOffAllowance  = 1.01 // for script loads and dials amortised over the run
)

// The scenarios the targets are set on.
const (
	hotKey    = "hot-key"
	uncontend = "uncontended"
)

// Targets judges baton against the baselines of the same run. The targets
// are meant for a real Redis on the same machine.
func Targets(results []Result) []Check {
	return []Check{
		compare(results, hotKey, "wait p99 ≤ 1/3 of the best baseline's",
			func(r Result) float64 { return -float64(r.WaitP99) },
			func(b, best Result) (bool, string) {
				limit := float64(best.WaitP99) / waitRatioTarget
				return float64(b.WaitP99) <= limit, fmt.Sprintf("baton %s, %s %s (limit %s)",
					short(b.WaitP99), best.Algorithm, short(best.WaitP99), short(time.Duration(limit)))
			}),
		single(results, hotKey, fmt.Sprintf("fairness min/max ≥ %.1f", fairnessTarget), func(b Result) (bool, string) {
			return b.Fairness >= fairnessTarget, fmt.Sprintf("baton %.2f (%d/%d)", b.Fairness, b.MinPerWorker, b.MaxPerWorker)
		}),
		compare(results, hotKey, "acq/s ≥ the best baseline's", acqPerSec, throughputDetail),
		single(results, hotKey, fmt.Sprintf("hand-off gap p50 ≤ %.0f× PING p50", gapPerPingTarget), func(b Result) (bool, string) {
			return b.Handoffs > 0 && b.PingP50 > 0 && b.GapPerPing <= gapPerPingTarget,
				fmt.Sprintf("gap %s = %.1f× ping %s", short(b.GapP50), b.GapPerPing, short(b.PingP50))
		}),
		compare(results, uncontend, "acq/s ≥ the best baseline's", acqPerSec, throughputDetail),
		single(results, uncontend, "one round trip per Lock and per Unlock", func(b Result) (bool, string) {
			return b.ClientPerAcq <= uncontendedTrips*oneOffAllowance,
				fmt.Sprintf("baton %.3f client commands per Lock+Unlock", b.ClientPerAcq)
		}),
	}
}

func acqPerSec(r Result) float64 { return r.AcqPerSec }

func throughputDetail(b, best Result) (bool, string) {
	return b.AcqPerSec >= best.AcqPerSec, fmt.Sprintf("baton %.0f, %s %.0f", b.AcqPerSec, best.Algorithm, best.AcqPerSec)
}

// single judges baton's result on scenario alone.
func single(results []Result, scenario, target string, judge func(baton Result) (bool, string)) Check {
	c := Check{Target: scenario + ": " + target, Status: "SKIP", Detail: "no baton result"}
	for _, r := range results {
		if r.Scenario == scenario && r.Algorithm == BatonName {
			c.Status, c.Detail = status(judge(r))
		}
	}
	return c
}

// compare judges baton's result on scenario against the baseline for which
// score is highest.
func compare(results []Result, scenario, target string, score func(Result) float64, judge func(baton, best Result) (bool, string)) Check {
	var best *Result
	for i, r := range results {
		if r.Scenario == scenario && r.Algorithm != BatonName && (best == nil || score(r) > score(*best)) {
			best = &results[i]
		}
	}
	if best == nil {
		return Check{Target: scenario + ": " + target, Status: "SKIP", Detail: "no baseline result"}
	}
	return single(results, scenario, target, func(b Result) (bool, string) { return judge(b, *best) })
}

func status(pass bool, detail string) (string, string) {
	if pass {
		return "PASS", detail
	}
	return "MISS", detail
}

// WriteTargets prints the checks, one per line.
func WriteTargets(w io.Writer, checks []Check) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range checks {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", c.Status, c.Target, c.Detail)
	}
	return tw.Flush()
}
