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
		{"gap p50", func(r Result) string { return optional(r.GapP50, short) }},
		{"gap p99", func(r Result) string { return optional(r.GapP99, short) }},
		{"ping p50", func(r Result) string { return short(r.PingP50) }},
		{"gap/ping", func(r Result) string { return optional(r.GapPerPing, timesCell) }},
	}, nil},
	{"cost", []column{
		{"client cmd/acq", func(r Result) string { return strconv.FormatFloat(r.ClientPerAcq, 'f', 2, 64) }},
		{"server cmd/acq", func(r Result) string { return optional(r.ServerPerAcq, twoDecimals) }},
		{"server µs/acq", func(r Result) string { return optional(r.ServerUsecPerAcq, twoDecimals) }},
		{"CPU µs/acq", func(r Result) string { return optional(r.CPUPerAcq, microseconds) }},
	}, nil},
	{"read-write locks and semaphores", []column{
		{"reads/s", func(r Result) string { return optional(r.ReadsPerSec, wholeNumber) }},
		{"read wait p99", func(r Result) string { return optional(r.ReadWaitP99, short) }},
		{"write wait p99", func(r Result) string { return optional(r.WriteWaitP99, short) }},
		{"write wait max", func(r Result) string { return optional(r.WriteWaitMax, short) }},
		{"leaked", func(r Result) string { return optional(r.PermitsLeaked, wholeCount) }},
		{"wakes/grant", func(r Result) string { return optional(r.WakeupsPerGrant, twoDecimals) }},
	}, func(r Result) bool { return r.ReadsPerSec != nil || r.PermitsLeaked != nil || r.WakeupsPerGrant != nil }},
}

// WriteTable prints the report's results as three aligned tables (speed,
// latency, cost), one row per scenario and algorithm, under a line naming
// the server (and, on miniredis, the caveat), and a legend. Its lines fit
// in 120 columns.
func WriteTable(w io.Writer, rep Report) error {
	if rep.Meta.Caveat != "" {
		fmt.Fprintln(w, rep.Meta.Caveat)
	}
	if _, err := fmt.Fprintf(w, "%s\nmedian of %d round(s)\n", rep.Meta.Headline(), rep.Meta.Rounds); err != nil {
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
	_, err := fmt.Fprint(w, tableLegend)
	return err
}

const tableLegend = `
spread: (fastest - slowest round) / median acq/s. fairness: least/most acquisitions of a worker.
wait: Lock call to holding, waits cut short by the end of a run included.
gap: release start to the next acquisition by a worker already waiting; gap/ping: in PING round trips.
client cmd: written by the lock clients; server cmd and µs: INFO commandstats, script-internal commands included.
CPU: user+system time of the bench process (lock clients and harness) during the run.
reads/s, read and write wait: an RW scenario's reads and writes apart. leaked: permits, after a holder of 2 is
SIGKILLed and its lease (2 s, where permits have one) has passed, that another process cannot get.
wakes/grant: a semaphore's waiters woken by a message (baton: PUBLISH and SPUBLISH calls, one client each)
per grant to a waiting call.
-: not measured (no hand-offs, or a server without commandstats; CPU on the embedded server).
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
