package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func ptr[T any](v T) *T { return &v }

// sampleReport is a run of two algorithms on two scenarios, with hand-offs
// and commandstats on one scenario only.
func sampleReport() Report {
	return Report{
		Meta: Meta{
			Server: "Redis 7.0.15 (redis-server on 127.0.0.1:6379)", RedisVersion: "7.0.15", GoVersion: "go1.25.0",
			Module: "github.com/batonlock/baton", ModuleVersion: "(devel)", Commit: "0123456789abcdef0123+dirty",
			Peers: map[string]string{"github.com/bsm/redislock": "v0.9.4"},
			Date:  time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC), GOMAXPROCS: 2, NumCPU: 2, Rounds: 3,
			Algorithms: []string{"baton", "poll-1ms"}, Scenarios: Scenarios(time.Second)[:2],
		},
		Results: []Result{
			{Algorithm: "baton", Scenario: "hot-key", Workers: 8, Names: 1, Hold: time.Millisecond, Rounds: 3, Elapsed: 3 * time.Second,
				Acquisitions: 3000, AcqPerSec: 1000, AcqPerSecMin: 950, AcqPerSecMax: 1100,
				WaitP50: 5 * time.Millisecond, WaitP99: 9 * time.Millisecond, WaitMax: 12 * time.Millisecond,
				Handoffs: 2900, GapP50: ptr(300 * time.Microsecond), GapP99: ptr(time.Millisecond), PingP50: 200 * time.Microsecond, GapPerPing: ptr(1.5),
				ClientCommands: 9000, ClientPerAcq: 3, ServerCommands: map[string]int64{"evalsha": 9000, "publish": 3000},
				ServerPerAcq: ptr(4.0), ServerUsecPerAcq: ptr(20.5), MinPerWorker: 350, MaxPerWorker: 400, Fairness: 0.875},
			{Algorithm: "poll-1ms", Scenario: "hot-key", Workers: 8, Names: 1, Hold: time.Millisecond, Rounds: 3, Elapsed: 3 * time.Second,
				Acquisitions: 2400, AcqPerSec: 800, AcqPerSecMin: 800, AcqPerSecMax: 800,
				WaitP50: 2 * time.Millisecond, WaitP99: 40 * time.Millisecond, WaitMax: 90 * time.Millisecond,
				PingP50: 200 * time.Microsecond, ClientPerAcq: 9.5, MinPerWorker: 100, MaxPerWorker: 500, Fairness: 0.2},
			{Algorithm: "baton", Scenario: "uncontended", Workers: 1, Names: 1, Rounds: 3, Acquisitions: 10, AcqPerSec: 20000,
				WaitP99: 80 * time.Microsecond, ClientPerAcq: 2, ServerPerAcq: ptr(2.0), ServerUsecPerAcq: ptr(9.0),
				CPUPerAcq: ptr(61500 * time.Nanosecond), Fairness: 1},
			{Algorithm: "poll-1ms", Scenario: "uncontended", Workers: 1, Names: 1, Rounds: 3, Acquisitions: 10, AcqPerSec: 25000,
				WaitP99: 60 * time.Microsecond, ClientPerAcq: 2, ServerPerAcq: ptr(2.0), ServerUsecPerAcq: ptr(6.0), Fairness: 1},
			{Algorithm: "redislock-1ms", Scenario: "uncontended", Workers: 1, Names: 1, Rounds: 3, Acquisitions: 10, AcqPerSec: 14000,
				WaitP99: 70 * time.Microsecond, ClientPerAcq: 2, ServerPerAcq: ptr(5.0), ServerUsecPerAcq: ptr(6.5),
				CPUPerAcq: ptr(50 * time.Microsecond), Fairness: 1},
		},
	}
}

func TestJSONRoundTripsWithItsMetadata(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteJSON(&buf, sampleReport()))
	var back Report
	require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
	require.Equal(t, sampleReport(), back)
	for _, key := range []string{`"server"`, `"redis_version"`, `"go_version"`, `"module_version"`, `"commit"`,
		`"date"`, `"gomaxprocs"`, `"rounds"`, `"scenarios"`, `"hold_ns"`, `"peers"`} {
		require.Contains(t, buf.String(), key)
	}
	require.Contains(t, buf.String(), `"gap_p50_ns": null`, "n/a is null, not 0")
}

func TestCSVWritesNotApplicableAsEmpty(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteCSV(&buf, sampleReport()))
	rows, err := csv.NewReader(&buf).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 1+len(sampleReport().Results))
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	for i, r := range sampleReport().Results {
		row := rows[i+1]
		require.Equal(t, r.Algorithm, row[col["algorithm"]])
		require.Equal(t, strconv.FormatInt(int64(r.WaitP99), 10), row[col["wait_p99_ns"]], "durations in ns")
		acq, err := strconv.ParseFloat(row[col["acq_per_sec"]], 64)
		require.NoError(t, err)
		require.Equal(t, r.AcqPerSec, acq)
		require.Equal(t, strconv.FormatInt(r.Violations, 10), row[col["violations"]])
	}
	baton, poll := rows[1], rows[2]
	require.Equal(t, "12000", baton[col["server_commands"]], "the total")
	require.Equal(t, "300000", baton[col["gap_p50_ns"]])
	require.Equal(t, "1.5", baton[col["gap_per_ping"]])
	require.Equal(t, "20.5", baton[col["server_usec_per_acq"]])
	for _, c := range []string{"server_commands", "server_commands_per_acq", "server_usec_per_acq", "gap_p50_ns", "gap_p99_ns", "gap_per_ping"} {
		require.Empty(t, poll[col[c]], "%s: n/a, not 0", c)
	}
}

func TestWriteFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	require.NoError(t, WriteFiles(dir, sampleReport()))
	for _, name := range []string{"results.json", "results.csv", "chart.svg"} {
		st, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		require.Positive(t, st.Size(), name)
	}
}
