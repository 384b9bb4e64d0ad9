package bench

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteTable prints results as an aligned table, one row per run.
func WriteTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\talgorithm\tacq/s\twait p50\twait p99\twait max\tgap p50\tping p50\tgap/ping\tclient cmd/acq\tserver cmd/acq\tfair min/max\tviolations\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t%d\t\n",
			r.Scenario, r.Algorithm, r.AcqPerSec, short(r.WaitP50), short(r.WaitP99), short(r.WaitMax),
			gapCell(r), short(r.PingP50), ratioCell(r), r.ClientPerAcq, serverCell(r),
			fmt.Sprintf("%.2f (%d/%d)", r.Fairness, r.MinPerWorker, r.MaxPerWorker), r.Violations)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "wait: Lock call to holding, waits cut short by the end of a run included; "+
		"gap: release start to another worker's acquire; client cmd: written by the lock clients; "+
		"server cmd: INFO commandstats, script-internal commands included.")
	return err
}

func gapCell(r Result) string {
	if r.Handoffs == 0 {
		return "-"
	}
	return short(r.GapP50)
}

func ratioCell(r Result) string {
	if r.Handoffs == 0 || r.PingP50 == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f×", r.GapPerPing)
}

func serverCell(r Result) string {
	if r.ServerCommands == nil {
		return "n/a"
	}
	return strconv.FormatFloat(r.ServerPerAcq, 'f', 2, 64)
}

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
