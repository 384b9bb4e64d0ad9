package bench

import (
	"time"

	"github.com/batonlock/baton/reentrant/redistest/redisproc"
)

// Result is what one algorithm did on one scenario. Durations are in
// nanoseconds in JSON and CSV.
type Result struct {
	Algorithm string        `json:"algorithm"`
	Scenario  string        `json:"scenario"`
	Workers   int           `json:"workers"`
	Names     int           `json:"names"`
	Hold      time.Duration `json:"hold_ns"`
	Think     time.Duration `json:"think_ns"`
	Elapsed   time.Duration `json:"elapsed_ns"`

	Acquisitions int64   `json:"acquisitions"`
	AcqPerSec    float64 `json:"acq_per_sec"`

	// Wait is from calling Lock to holding the lock. Locks still waiting
	// when the run ends count with the wait they had so far.
	WaitP50 time.Duration `json:"wait_p50_ns"`
	WaitP99 time.Duration `json:"wait_p99_ns"`
	WaitMax time.Duration `json:"wait_max_ns"`

	// A hand-off is an acquisition right after another worker's release by
	// a worker that was already waiting; its gap runs from the start of
	// that release to the acquisition.
	Handoffs int64         `json:"handoffs"`
	GapP50   time.Duration `json:"gap_p50_ns"`
	GapP99   time.Duration `json:"gap_p99_ns"`
	// PingP50 is the median PING round trip, measured during the run.
	PingP50 time.Duration `json:"ping_p50_ns"`
	// GapPerPing is GapP50 in PING round trips.
	GapPerPing float64 `json:"gap_per_ping"`

	// ClientCommands is what the workers' clients wrote to Redis during the
	// run, pub/sub and connection handshakes included.
	ClientCommands int64   `json:"client_commands"`
	ClientPerAcq   float64 `json:"client_commands_per_acq"`
	// ServerCommands is the INFO commandstats delta by command, which also
	// counts the commands scripts run; nil when the server has no
	// commandstats (miniredis).
	ServerCommands redisproc.CommandStats `json:"server_commands,omitempty"`
	ServerPerAcq   float64                `json:"server_commands_per_acq"`

	// Acquisitions of the least and the most served worker, and their ratio.
	MinPerWorker int64   `json:"min_per_worker"`
	MaxPerWorker int64   `json:"max_per_worker"`
	Fairness     float64 `json:"fairness"`

	// Violations counts acquisitions of a name some other worker still held.
	Violations int64 `json:"violations"`
}

// summarize turns the workers' samples into a Result.
func summarize(algo string, sc Scenario, elapsed time.Duration, workers []*worker, rec *recorder, pings []time.Duration) Result {
	var waits, gaps []time.Duration
	perWorker := make([]int64, len(workers))
	for i, w := range workers {
		waits = append(waits, w.waits...)
		gaps = append(gaps, w.gaps...)
		perWorker[i] = w.acquisitions
	}
	r := Result{
		Algorithm: algo, Scenario: sc.Name, Workers: sc.Workers, Names: sc.Names,
		Hold: sc.Hold, Think: sc.Think, Elapsed: elapsed,
		Handoffs:   int64(len(gaps)),
		Violations: rec.violations.Load(),
	}
	for _, n := range perWorker {
		r.Acquisitions += n
	}
	r.AcqPerSec = float64(r.Acquisitions) / elapsed.Seconds()
	wait := distributionOf(waits)
	r.WaitP50, r.WaitP99, r.WaitMax = wait.P50, wait.P99, wait.Max
	gap := distributionOf(gaps)
	r.GapP50, r.GapP99 = gap.P50, gap.P99
	r.PingP50 = distributionOf(pings).P50
	if r.PingP50 > 0 {
		r.GapPerPing = float64(r.GapP50) / float64(r.PingP50)
	}
	r.MinPerWorker, r.MaxPerWorker, r.Fairness = fairness(perWorker)
	return r
}
