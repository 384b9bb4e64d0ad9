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

	"github.com/batonlock/baton/reentrant/redistest/redisproc"
)

// sampleResults is one run of two algorithms on two scenarios, one of them
// without commandstats.
func sampleResults() []Result {
	return []Result{
		{Algorithm: "baton", Scenario: "hot-key", Workers: 8, Names: 1, Hold: time.Millisecond, Elapsed: 3 * time.Second,
			Acquisitions: 3000, AcqPerSec: 1000, WaitP50: 5 * time.Millisecond, WaitP99: 9 * time.Millisecond, WaitMax: 12 * time.Millisecond,
			Handoffs: 2900, GapP50: 300 * time.Microsecond, GapP99: time.Millisecond, PingP50: 100 * time.Microsecond, GapPerPing: 3,
			ClientCommands: 9000, ClientPerAcq: 3, ServerCommands: redisproc.CommandStats{"evalsha": 9000, "publish": 3000}, ServerPerAcq: 4,
			MinPerWorker: 350, MaxPerWorker: 400, Fairness: 0.875},
		{Algorithm: "poll-1ms", Scenario: "hot-key", Workers: 8, Names: 1, Hold: time.Millisecond, Elapsed: 3 * time.Second,
			Acquisitions: 2400, AcqPerSec: 800, WaitP50: 2 * time.Millisecond, WaitP99: 40 * time.Millisecond, WaitMax: 90 * time.Millisecond,
			ClientPerAcq: 9.5, MinPerWorker: 100, MaxPerWorker: 500, Fairness: 0.2},
		{Algorithm: "baton", Scenario: "uncontended", Workers: 1, Names: 1, Acquisitions: 10, AcqPerSec: 20000, WaitP99: 80 * time.Microsecond, ClientPerAcq: 2},
		{Algorithm: "poll-1ms", Scenario: "uncontended", Workers: 1, Names: 1, Acquisitions: 10, AcqPerSec: 25000, WaitP99: 60 * time.Microsecond, ClientPerAcq: 2},
	}
}

func TestJSONRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteJSON(&buf, sampleResults()))
	var back []Result
	require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
	require.Equal(t, sampleResults(), back)
}

func TestCSVRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteCSV(&buf, sampleResults()))
	rows, err := csv.NewReader(&buf).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 1+len(sampleResults()))
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	for i, r := range sampleResults() {
		row := rows[i+1]
		require.Equal(t, r.Algorithm, row[col["algorithm"]])
		require.Equal(t, r.Scenario, row[col["scenario"]])
		require.Equal(t, strconv.FormatInt(int64(r.WaitP99), 10), row[col["wait_p99_ns"]], "durations in ns")
		acq, err := strconv.ParseFloat(row[col["acq_per_sec"]], 64)
		require.NoError(t, err)
		require.Equal(t, r.AcqPerSec, acq)
		fair, err := strconv.ParseFloat(row[col["fairness"]], 64)
		require.NoError(t, err)
		require.Equal(t, r.Fairness, fair)
		require.Equal(t, strconv.FormatInt(r.Violations, 10), row[col["violations"]])
	}
	require.Equal(t, "12000", rows[1][col["server_commands"]], "the total")
	require.Empty(t, rows[2][col["server_commands"]], "unknown, not zero")
}

func TestWriteFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	require.NoError(t, WriteFiles(dir, sampleResults()))
	for _, name := range []string{"results.json", "results.csv", "chart.svg"} {
		st, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		require.Positive(t, st.Size(), name)
	}
}
