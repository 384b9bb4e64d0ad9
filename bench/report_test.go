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
				WriteWaitMax: ptr(99999 * time.Millisecond), PermitsLeaked: ptr(int64(12345)), Handoffs: 12345, Kind: sc.Kind,
				LastReadP50: ptr(99999 * time.Millisecond), LastReadPerPing: ptr(12345.67), WakeupsPerGrant: ptr(12345.67)})
		}
	}
	return rep
}

func TestTableLinesFitIn100Columns(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteTable(&buf, widestReport()))
	real := widestReport()
	real.Meta.Caveat, real.Meta.RTT = "", RTTJudged
	require.NoError(t, WriteTable(&buf, real))
	require.NoError(t, WriteJudged(&buf, real))
	require.NoError(t, WriteJudged(&buf, widestReport()))
	for line := range strings.Lines(buf.String()) {
		require.LessOrEqual(t, utf8.RuneCountInString(strings.TrimRight(line, "\n")), 100, "%q", line)
	}
	for _, topic := range []string{"\nspeed\n", "\nlatency\n", "\nhand-offs\n", "\ncost per acquisition\n", "\nread-write locks\n", "\nsemaphores\n"} {
		require.Contains(t, buf.String(), topic)
	}
	require.Contains(t, buf.String(), MiniredisCaveat)
	require.Contains(t, buf.String(), "through a delay proxy of 500µs each way")
}

// A progress line of the widest names and figures fits in 100 columns.
func TestProgressLinesFitIn100Columns(t *testing.T) {
	var buf bytes.Buffer
	s := Suite{Algorithms: AllAlgorithms(), Scenarios: AllScenarios(time.Second), Rounds: 9, Progress: &buf}
	require.Greater(t, s.Runs(), 99, "a three-digit counter")
	p := newProgress(s, s.Rounds)
	p.done = s.Runs() - 1
	r := widestReport().Results[0]
	r.Scenario, r.Algorithm, r.AcqPerSec, r.Violations = rwAdmits, WireName, 999999, 9
	p.line(8, r)
	require.LessOrEqual(t, utf8.RuneCountInString(strings.TrimSpace(buf.String())), 100, buf.String())
}

// On miniredis no target is judged, with one line saying why; on
// loopback the round-trip targets are skipped, and the output says why
// latency has no target there.
func TestJudgedTargetsFollowTheServer(t *testing.T) {
	judged := func(rep Report) string {
		var buf bytes.Buffer
		require.NoError(t, WriteJudged(&buf, rep))
		return buf.String()
	}
	rep := sampleReport()
	rep.Meta.Caveat = MiniredisCaveat
	out := judged(rep)
	require.NotContains(t, out, "MISS")
	require.NotContains(t, out, "PASS")
	require.Equal(t, 1, strings.Count(strings.TrimSpace(out), "\n")+1, out)
	require.Contains(t, out, "not judged")

	rep.Meta.Caveat = ""
	out = judged(rep)
	require.Contains(t, out, "MISS", "the sample misses a loopback target")
	_, rtt, _ := strings.Cut(out, "round-trip targets")
	require.NotContains(t, rtt, "MISS", "no delay: the round-trip targets are skipped")
	require.Contains(t, rtt, "SKIP  uncontended: wall per Lock+Unlock ≤ 1.1× redislock's")
	require.Contains(t, rtt, "latency has no target on loopback")

	require.NotContains(t, out, "storm:", "the sample ran no storm: nothing to say of it")

	rep.Meta.RTT = RTTJudged
	_, rtt, _ = strings.Cut(judged(rep), "round-trip targets")
	require.Contains(t, rtt, "PASS  uncontended: wall per Lock+Unlock ≤ 1.1× redislock's")
	require.NotContains(t, rtt, "latency has no target")
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
	require.Equal(t, []string{"hot-key", "poll-1ms", "2ms", "40ms", "90ms", "200µs"}, row("latency", "poll-1ms", "hot-key"))
	require.Equal(t, []string{"hot-key", "baton", "5ms", "9ms", "12ms", "200µs"}, row("latency", "baton", "hot-key"))
	require.Equal(t, []string{"hot-key", "baton", "300µs", "1ms", "1.50×"}, row("hand-offs", "baton", "hot-key"))
	require.NotContains(t, out, "hot-key  poll-1ms  -", "no hand-off row without hand-offs")
	require.Equal(t, []string{"hot-key", "poll-1ms", "9.50", "-", "-", "-"}, row("cost per acquisition", "poll-1ms", "hot-key"))
	require.Equal(t, []string{"uncontended", "baton", "2.00", "2.00", "9.00", "61.50"}, row("cost per acquisition", "baton", "uncontended"))
	require.Equal(t, []string{"hot-key", "baton", "1000", "15%", "0.875", "(350/400)", "0"}, row("speed", "baton", "hot-key"))
}
