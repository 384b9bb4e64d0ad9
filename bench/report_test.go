package bench

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// widestReport has every standard algorithm and scenario with figures as
// wide as a run prints: five-digit rates, second-long waits, n/a cells.
func widestReport() Report {
	rep := sampleReport()
	rep.Meta.Caveat = MiniredisCaveat
	rep.Meta.Server = "Redis 7.0.15 (throwaway redis-server on 127.0.0.1:65535)"
	rep.Meta.Commit = "0123456789abcdef0123456789abcdef01234567+dirty"
	rep.Results = nil
	for _, sc := range AllScenarios(time.Second) {
		for _, a := range AllAlgorithms() {
			rep.Results = append(rep.Results, Result{Algorithm: a.Name, Scenario: sc.Name, Rounds: 3, Workers: 1, Hold: 999 * time.Millisecond,
				AcqPerSec: 123456, AcqPerSecMin: 1000, AcqPerSecMax: 200000,
				WaitP50: 999 * time.Millisecond, WaitP99: 12345 * time.Millisecond, WaitMax: 99999 * time.Millisecond,
				GapP50: ptr(999 * time.Millisecond), GapP99: ptr(99999 * time.Millisecond), PingP50: 999 * time.Microsecond, GapPerPing: ptr(12345.67),
				ClientPerAcq: 12345.67, ServerPerAcq: ptr(12345.67), ServerUsecPerAcq: ptr(123456.78), CPUPerAcq: ptr(99999 * time.Millisecond),
				MinPerWorker: 123456, MaxPerWorker: 1234567, Fairness: 0.1, Violations: 12345,
				ReadsPerSec: ptr(123456.0), ReadWaitP99: ptr(12345 * time.Millisecond), WriteWaitP99: ptr(12345 * time.Millisecond),
				WriteWaitMax: ptr(99999 * time.Millisecond), PermitsLeaked: ptr(int64(12345))})
		}
	}
	return rep
}

func TestTableLinesFitIn120Columns(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteTable(&buf, widestReport()))
	require.NoError(t, WriteTargets(&buf, Targets(widestReport().Results)))
	for line := range strings.Lines(buf.String()) {
		require.LessOrEqual(t, utf8.RuneCountInString(strings.TrimRight(line, "\n")), 120, "%q", line)
	}
	for _, topic := range []string{"\nspeed\n", "\nlatency\n", "\ncost\n"} {
		require.Contains(t, buf.String(), topic)
	}
	require.Contains(t, buf.String(), MiniredisCaveat)
}

func TestTableShowsNotApplicableAsADash(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteTable(&buf, sampleReport()))
	out := buf.String()
	require.NotContains(t, out, MiniredisCaveat, "a real server has no caveat")
	require.Contains(t, out, "commit 0123456789ab+dirty")
	row := func(section, algo, scenario string) []string {
		_, rest, _ := strings.Cut(out, "\n"+section+"\n")
		for line := range strings.Lines(rest) {
			if f := strings.Fields(line); len(f) > 2 && f[0] == scenario && f[1] == algo {
				return f
			}
		}
		t.Fatalf("no %s row for %s on %s", section, algo, scenario)
		return nil
	}
	require.Equal(t, []string{"hot-key", "poll-1ms", "2ms", "40ms", "90ms", "-", "-", "200µs", "-"}, row("latency", "poll-1ms", "hot-key"))
	require.Equal(t, []string{"hot-key", "baton", "5ms", "9ms", "12ms", "300µs", "1ms", "200µs", "1.50×"}, row("latency", "baton", "hot-key"))
	require.Equal(t, []string{"hot-key", "poll-1ms", "9.50", "-", "-", "-"}, row("cost", "poll-1ms", "hot-key"))
	require.Equal(t, []string{"uncontended", "baton", "2.00", "2.00", "9.00", "61.50"}, row("cost", "baton", "uncontended"))
	require.Equal(t, []string{"hot-key", "baton", "1000", "15%", "0.875", "(350/400)", "0"}, row("speed", "baton", "hot-key"))
}
