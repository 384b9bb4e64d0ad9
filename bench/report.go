package bench

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// column is one column of a table: its heading and its cell for a result.
type column struct {
	head string
	cell func(Result) string
}

// The tables, by topic, each narrow enough for a terminal. Every one starts
// with the scenario and the algorithm, and has a row for every result its
// rows accepts (all when nil); a table without rows is left out.
var tables = []struct {
	title string
	cols  []column
	rows  func(Result) bool
}{
	{"speed", []column{
		{"acq/s", func(r Result) string { return strconv.FormatFloat(r.AcqPerSec, 'f', 0, 64) }},
		{"spread", spreadCell},
		{"fairness", func(r Result) string { return fmt.Sprintf("%.3f (%d/%d)", r.Fairness, r.MinPerWorker, r.MaxPerWorker) }},
		{"violations", func(r Result) string { return strconv.FormatInt(r.Violations, 10) }},
	}, nil},
	{"latency", []column{
		{"wait p50", func(r Result) string { return short(r.WaitP50) }},
		{"wait p99", func(r Result) string { return short(r.WaitP99) }},
		{"wait max", func(r Result) string { return short(r.WaitMax) }},
		{"ping p50", func(r Result) string { return short(r.PingP50) }},
	}, nil},
	{"hand-offs", []column{
		{"gap p50", func(r Result) string { return optional(r.GapP50, short) }},
		{"gap p99", func(r Result) string { return optional(r.GapP99, short) }},
		{"gap/ping", func(r Result) string { return optional(r.GapPerPing, timesCell) }},
	}, func(r Result) bool { return r.Handoffs > 0 }},
	{"cost per acquisition", []column{
		{"client cmd", func(r Result) string { return strconv.FormatFloat(r.ClientPerAcq, 'f', 2, 64) }},
		{"server cmd", func(r Result) string { return optional(r.ServerPerAcq, twoDecimals) }},
		{"server µs", func(r Result) string { return optional(r.ServerUsecPerAcq, twoDecimals) }},
		{"CPU µs", func(r Result) string { return optional(r.CPUPerAcq, microseconds) }},
	}, nil},
	{"read-write locks", []column{
		{"reads/s", func(r Result) string { return optional(r.ReadsPerSec, wholeNumber) }},
		{"read p99", func(r Result) string { return optional(r.ReadWaitP99, short) }},
		{"write p99", func(r Result) string { return optional(r.WriteWaitP99, short) }},
		{"write max", func(r Result) string { return optional(r.WriteWaitMax, short) }},
		{"last read/ping", func(r Result) string { return optional(r.LastReadPerPing, timesCell) }},
	}, func(r Result) bool { return r.Kind == KindRW }},
	{"semaphores", []column{
		{"leaked", func(r Result) string { return optional(r.PermitsLeaked, wholeCount) }},
		{"wakes/grant", func(r Result) string { return optional(r.WakeupsPerGrant, twoDecimals) }},
	}, func(r Result) bool { return r.Kind == KindSemaphore }},
	{"replica acknowledgements", []column{
		{"SET+WAIT p50", func(r Result) string { return optional(r.AckP50, short) }},
		{"replica lag p50", func(r Result) string { return optional(r.LagP50, short) }},
	}, func(r Result) bool { return r.Kind == KindReplicated }},
}

// WriteTable prints the report's results as aligned tables by topic, one
// row per scenario and algorithm, under lines naming the server (and, on
// miniredis, the caveat), and a legend. Its lines fit in 100 columns.
func WriteTable(w io.Writer, rep Report) error {
	if rep.Meta.Caveat != "" {
		fmt.Fprintln(w, rep.Meta.Caveat)
	}
	if _, err := fmt.Fprintf(w, "%s\nmedian of %d round(s)\n", rep.Meta.headlines(), rep.Meta.Rounds); err != nil {
		return err
	}
	for _, t := range tables {
		rows := slices.DeleteFunc(slices.Clone(rep.Results), func(r Result) bool { return t.rows != nil && !t.rows(r) })
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s\n", t.title)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		head := []string{"scenario", "algorithm"}
		for _, c := range t.cols {
			head = append(head, c.head)
		}
		fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
		for _, r := range rows {
			row := []string{r.Scenario, r.Algorithm}
			for _, c := range t.cols {
				row = append(row, c.cell(r))
			}
			fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if err := writeScripts(w, rep.Scripts); err != nil {
		return err
	}
	_, err := fmt.Fprint(w, tableLegend)
	return err
}

// writeScripts prints the server time of each algorithm's calls, if
// measured.
func writeScripts(w io.Writer, costs []ScriptCost) error {
	if len(costs) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nserver time per call, one at a time (µs per script run; scripts per call)\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "algorithm\thold\tacquire µs\tscripts\trelease µs\tscripts\tserver µs/pair\t")
	for _, c := range costs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%s\t%.2f\t%.1f\t\n", c.Algorithm, c.Hold,
			optional(c.Acquire.UsecPerScript, oneDecimal), c.Acquire.ScriptsPerCall,
			optional(c.Release.UsecPerScript, oneDecimal), c.Release.ScriptsPerCall,
			c.Acquire.UsecPerCall+c.Release.UsecPerCall)
	}
	return tw.Flush()
}

func oneDecimal(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

const tableLegend = `
spread: (fastest - slowest round) / median acq/s. fairness: least/most acquisitions of a worker.
wait: Lock call to holding, waits cut short by the end of a run included.
gap: release start to the next acquisition by a worker already waiting; gap/ping: in PING round
trips. last read/ping: a write's release start to the last queued read it admits holding, p50.
client cmd: written by the lock clients; server cmd and µs: INFO commandstats, script-internal
commands included. CPU: user+system time of the bench process (lock clients and harness).
reads/s, read and write (wait): an RW scenario's reads and writes apart. leaked: permits, after a
holder of 2 is SIGKILLed and its lease (2 s, where permits have one) has passed, that another
process cannot get. wakes/grant: a semaphore's waiters woken by a message (baton: PUBLISH and
SPUBLISH calls, one client each) per grant to a waiting call. SET+WAIT: a write acknowledged by
the replica, one pipeline, on the idle master before each run; replica lag: that less a PING.
-: not measured (no hand-offs, no commandstats; CPU on the embedded server or with -rtt).
`

func spreadCell(r Result) string {
	if r.AcqPerSec <= 0 || r.Rounds < 2 {
		return "-"
	}
	return strconv.FormatFloat(100*(r.AcqPerSecMax-r.AcqPerSecMin)/r.AcqPerSec, 'f', 0, 64) + "%"
}

// optional prints a figure, or "-" when it is n/a.
func optional[T any](v *T, format func(T) string) string {
	if v == nil {
		return "-"
	}
	return format(*v)
}

func timesCell(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) + "×" }

func wholeNumber(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }

func wholeCount(n int64) string { return strconv.FormatInt(n, 10) }

func twoDecimals(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

func microseconds(d time.Duration) string { return twoDecimals(float64(d) / float64(time.Microsecond)) }

// short prints d with about three significant digits in a fitting unit.
func short(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < time.Microsecond:
		return fmt.Sprintf("%dns", d.Nanoseconds())
	case d < time.Millisecond:
		return threeDigits(float64(d)/float64(time.Microsecond)) + "µs"
	case d < time.Second:
		return threeDigits(float64(d)/float64(time.Millisecond)) + "ms"
	}
	return threeDigits(d.Seconds()) + "s"
}

// threeDigits prints v (≥ 1) with at most three significant digits, never
// in exponent form, and without trailing zeros: 1, 1.5, 12.3, 950.
func threeDigits(v float64) string {
	decimals := 0
	switch {
	case v < 10:
		decimals = 2
	case v < 100:
		decimals = 1
	}
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// WriteJudged prints the run's targets: none on miniredis, saying why; else
// Targets and QuorumTargets, and RTTTargets, which judge only a run through
// a delay proxy, each of those of the scenarios run; and the cost of the
// quorum token's second round (QuorumRoundTwo).
func WriteJudged(w io.Writer, rep Report) error {
	if rep.Meta.Caveat != "" {
		_, err := fmt.Fprintln(w, "\ntargets: not judged, they are set for a real Redis; miniredis is a slow in-process server")
		return err
	}
	fmt.Fprintln(w, "\ntargets (set for a real Redis), on figures of this run:")
	if err := WriteTargets(w, ofScenariosRun(rep, slices.Concat(Targets(rep.Results), QuorumTargets(rep.Results)))); err != nil {
		return err
	}
	if lines := QuorumRoundTwo(rep.Results); len(lines) > 0 {
		fmt.Fprintln(w, "\nthe quorum token's second round: uncontended Lock p50 less one round to every node")
		for _, l := range lines {
			fmt.Fprintln(w, "  "+l)
		}
	}
	rtt := ofScenariosRun(rep, RTTTargets(rep.Results, rep.Meta.RTT))
	if len(rtt) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nround-trip targets (set at -rtt %s), on figures of this run:\n", RTTJudged)
	if err := WriteTargets(w, rtt); err != nil {
		return err
	}
	if rep.Meta.RTT == 0 {
		_, err := fmt.Fprintln(w, "latency has no target on loopback: a round trip there costs less than the scripts\n"+
			"and Go's scheduling, which its figures then measure; -rtt "+RTTJudged.String()+" adds a network's")
		return err
	}
	return nil
}

// ofScenariosRun leaves out the checks of scenarios the run did not run,
// which could only say so.
func ofScenariosRun(rep Report, checks []Check) []Check {
	return slices.DeleteFunc(checks, func(c Check) bool {
		scenario, _, _ := strings.Cut(c.Target, ": ")
		return !slices.ContainsFunc(rep.Results, func(r Result) bool { return r.Scenario == scenario })
	})
}
