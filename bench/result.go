package bench

import (
	"cmp"
	"slices"
	"time"
)

// Result is what one algorithm did on one scenario: in one round, or, from
// Suite.Run, over all rounds (see combine). Durations are in nanoseconds in
// JSON and CSV. A figure a run could not measure is n/a: a nil pointer, null
// in JSON, an empty CSV field and "-" in the tables, never 0.
type Result struct {
	Algorithm string        `json:"algorithm"`
	Scenario  string        `json:"scenario"`
	Kind      Kind          `json:"kind,omitempty"`
	Workers   int           `json:"workers"`
	Names     int           `json:"names"`
	Hold      time.Duration `json:"hold_ns"`
	Think     time.Duration `json:"think_ns"`
	// Rounds is how many rounds the figures come from; Elapsed is their
	// total run time.
	Rounds  int           `json:"rounds"`
	Elapsed time.Duration `json:"elapsed_ns"`

	// Acquisitions is the total over the rounds; AcqPerSec their median,
	// and AcqPerSecMin and AcqPerSecMax the spread between rounds.
	Acquisitions int64   `json:"acquisitions"`
	AcqPerSec    float64 `json:"acq_per_sec"`
	AcqPerSecMin float64 `json:"acq_per_sec_min"`
	AcqPerSecMax float64 `json:"acq_per_sec_max"`

	// Wait is from calling Lock to holding the lock. Locks still waiting
	// when the run ends count with the wait they had so far.
	WaitP50 time.Duration `json:"wait_p50_ns"`
	WaitP99 time.Duration `json:"wait_p99_ns"`
	WaitMax time.Duration `json:"wait_max_ns"`

	// A hand-off is an acquisition right after another worker's release by
	// a worker that was already waiting; its gap runs from the start of
	// that release to the acquisition. The gaps are n/a without hand-offs.
	Handoffs int64          `json:"handoffs"`
	GapP50   *time.Duration `json:"gap_p50_ns"`
	GapP99   *time.Duration `json:"gap_p99_ns"`
	// PingP50 is the median PING round trip, measured during the run.
	PingP50 time.Duration `json:"ping_p50_ns"`
	// GapPerPing is GapP50 in PING round trips.
	GapPerPing *float64 `json:"gap_per_ping"`
	// AckP50 is, in a replicated scenario, the median round trip of a SET
	// and a WAIT for the replica in one pipeline, timed alternately with
	// as many PINGs on the idle master before each run (measureAck);
	// LagP50 is what the replica adds to the PING: AckP50 less the PINGs'
	// median. n/a elsewhere.
	AckP50 *time.Duration `json:"ack_p50_ns"`
	LagP50 *time.Duration `json:"replica_lag_p50_ns"`

	// ClientCommands is what the workers' clients wrote to Redis during the
	// runs, pub/sub included.
	ClientCommands int64   `json:"client_commands"`
	ClientPerAcq   float64 `json:"client_commands_per_acq"`
	// ClientDials is how many connections the workers' clients dialed
	// during the runs: each one's handshake (HELLO, CLIENT SETINFO, ...) is
	// in ClientCommands.
	ClientDials int64 `json:"client_dials"`
	// ServerCommands is the INFO commandstats delta in calls by command,
	// which also counts the commands scripts run, and ServerUsecPerAcq the
	// server time (commandstats usec) per acquisition; n/a when the server
	// has no commandstats (miniredis).
	ServerCommands   map[string]int64 `json:"server_commands,omitempty"`
	ServerPerAcq     *float64         `json:"server_commands_per_acq"`
	ServerUsecPerAcq *float64         `json:"server_usec_per_acq"`

	// CPUPerAcq is the user+system CPU time the bench process used during
	// the runs per acquisition: the lock clients' and, alike for every
	// algorithm, the harness's (the workers' loops, the pinger). n/a on the
	// embedded server, whose CPU is the process's own.
	CPUPerAcq *time.Duration `json:"cpu_per_acq_ns"`

	// Acquisitions of the least and the most served worker, and their ratio.
	MinPerWorker int64   `json:"min_per_worker"`
	MaxPerWorker int64   `json:"max_per_worker"`
	Fairness     float64 `json:"fairness"`

	// Violations counts acquisitions of a name some other worker still held,
	// over all rounds.
	Violations int64 `json:"violations"`

	// In an RW scenario: the reads taken per second, the wait p99 of reads
	// and of writes, and the longest wait of a write (from Lock, cut short
	// by the end of the run or not); n/a elsewhere.
	ReadsPerSec  *float64       `json:"reads_per_sec"`
	ReadWaitP99  *time.Duration `json:"read_wait_p99_ns"`
	WriteWaitP99 *time.Duration `json:"write_wait_p99_ns"`
	WriteWaitMax *time.Duration `json:"write_wait_max_ns"`
	// LastReadP50 is, in an RW scenario with fixed writers, the median
	// over the writes' releases that admitted every reader of the time
	// from the start of the release to the last of those reads holding;
	// LastReadPerPing is that in PING round trips. n/a elsewhere.
	LastReadP50     *time.Duration `json:"last_read_p50_ns"`
	LastReadPerPing *float64       `json:"last_read_per_ping"`

	// PermitsLeaked is, in a semaphore scenario on a target with a URL,
	// how many permits were still not to be had once a holder of
	// leakHeld permits had been SIGKILLed and leakLease had passed (see
	// measureLeak); n/a elsewhere. It is measured once per run, after the
	// rounds.
	PermitsLeaked *int64 `json:"permits_leaked"`
	// WakeupsPerGrant is, in a semaphore scenario, the wake-ups of waiting
	// calls per grant to a waiting call (see WakeCounts): 1 when a release
	// wakes only the waiters it admits. n/a elsewhere, or without grants.
	WakeupsPerGrant *float64 `json:"wakeups_per_grant"`
}

// summarize turns the workers' samples of one round into a Result.
func summarize(algo string, sc Scenario, elapsed time.Duration, workers []*worker, rec *recorder, pings []time.Duration) Result {
	var waits, gaps []time.Duration
	perWorker := make([]int64, len(workers))
	for i, w := range workers {
		waits = append(waits, w.waits...)
		gaps = append(gaps, w.gaps...)
		perWorker[i] = w.acquisitions
	}
	r := Result{
		Algorithm: algo, Scenario: sc.Name, Kind: sc.Kind, Workers: sc.Workers, Names: sc.Names,
		Hold: sc.Hold, Think: sc.Think, Rounds: 1, Elapsed: elapsed,
		Handoffs:   int64(len(gaps)),
		Violations: rec.violations.Load(),
	}
	for _, n := range perWorker {
		r.Acquisitions += n
	}
	r.AcqPerSec = float64(r.Acquisitions) / elapsed.Seconds()
	r.AcqPerSecMin, r.AcqPerSecMax = r.AcqPerSec, r.AcqPerSec
	wait := distributionOf(waits)
	r.WaitP50, r.WaitP99, r.WaitMax = wait.P50, wait.P99, wait.Max
	r.PingP50 = distributionOf(pings).P50
	if len(gaps) > 0 {
		gap := distributionOf(gaps)
		r.GapP50, r.GapP99 = &gap.P50, &gap.P99
		r.GapPerPing = ratio(float64(gap.P50), float64(r.PingP50))
	}
	r.MinPerWorker, r.MaxPerWorker, r.Fairness = fairness(perWorker)
	if sc.Kind == KindRW {
		summarizeRW(&r, elapsed, workers)
	}
	if last := rec.lastReads(sc.Workers - sc.Writers); sc.Writers > 0 && len(last) > 0 {
		p50 := distributionOf(last).P50
		r.LastReadP50, r.LastReadPerPing = &p50, ratio(float64(p50), float64(r.PingP50))
	}
	return r
}

// summarizeRW adds the reads' and the writes' own figures of an RW round.
func summarizeRW(r *Result, elapsed time.Duration, workers []*worker) {
	var reads int64
	var readWaits, writeWaits []time.Duration
	for _, w := range workers {
		reads += w.reads
		readWaits = append(readWaits, w.readWaits...)
		writeWaits = append(writeWaits, w.writeWaits...)
	}
	r.ReadsPerSec = ratio(float64(reads), elapsed.Seconds())
	if len(readWaits) > 0 {
		read := distributionOf(readWaits)
		r.ReadWaitP99 = &read.P99
	}
	if len(writeWaits) > 0 {
		write := distributionOf(writeWaits)
		r.WriteWaitP99, r.WriteWaitMax = &write.P99, &write.Max
	}
}

// combine merges the rounds of one algorithm on one scenario: counts add
// up, acq/s keeps its spread (the slowest and the fastest round), and every
// other figure is its median over the rounds that measured it (the lower
// middle for an even count, so always a measured value). Fairness comes
// with the worker counts of the round it was taken from.
func combine(rounds []Result) Result {
	r := rounds[0]
	r.Rounds = len(rounds)
	r.Elapsed, r.Acquisitions, r.Handoffs, r.ClientCommands, r.ClientDials, r.Violations = 0, 0, 0, 0, 0, 0
	r.ServerCommands = nil
	for _, x := range rounds {
		r.Elapsed += x.Elapsed
		r.Acquisitions += x.Acquisitions
		r.Handoffs += x.Handoffs
		r.ClientCommands += x.ClientCommands
		r.ClientDials += x.ClientDials
		r.Violations += x.Violations
		for k, v := range x.ServerCommands {
			if r.ServerCommands == nil {
				r.ServerCommands = map[string]int64{}
			}
			r.ServerCommands[k] += v
		}
	}
	acq := figures(rounds, func(x Result) float64 { return x.AcqPerSec })
	r.AcqPerSec, r.AcqPerSecMin, r.AcqPerSecMax = median(acq), slices.Min(acq), slices.Max(acq)
	r.ClientPerAcq = median(figures(rounds, func(x Result) float64 { return x.ClientPerAcq }))
	r.WaitP50 = median(figures(rounds, func(x Result) time.Duration { return x.WaitP50 }))
	r.WaitP99 = median(figures(rounds, func(x Result) time.Duration { return x.WaitP99 }))
	r.WaitMax = median(figures(rounds, func(x Result) time.Duration { return x.WaitMax }))
	r.PingP50 = median(figures(rounds, func(x Result) time.Duration { return x.PingP50 }))
	r.GapP50 = medianOf(rounds, func(x Result) *time.Duration { return x.GapP50 })
	r.GapP99 = medianOf(rounds, func(x Result) *time.Duration { return x.GapP99 })
	r.GapPerPing = medianOf(rounds, func(x Result) *float64 { return x.GapPerPing })
	r.AckP50 = medianOf(rounds, func(x Result) *time.Duration { return x.AckP50 })
	r.LagP50 = medianOf(rounds, func(x Result) *time.Duration { return x.LagP50 })
	r.ServerPerAcq = medianOf(rounds, func(x Result) *float64 { return x.ServerPerAcq })
	r.ServerUsecPerAcq = medianOf(rounds, func(x Result) *float64 { return x.ServerUsecPerAcq })
	r.CPUPerAcq = medianOf(rounds, func(x Result) *time.Duration { return x.CPUPerAcq })
	r.ReadsPerSec = medianOf(rounds, func(x Result) *float64 { return x.ReadsPerSec })
	r.ReadWaitP99 = medianOf(rounds, func(x Result) *time.Duration { return x.ReadWaitP99 })
	r.WriteWaitP99 = medianOf(rounds, func(x Result) *time.Duration { return x.WriteWaitP99 })
	r.WriteWaitMax = medianOf(rounds, func(x Result) *time.Duration { return x.WriteWaitMax })
	r.WakeupsPerGrant = medianOf(rounds, func(x Result) *float64 { return x.WakeupsPerGrant })
	r.LastReadP50 = medianOf(rounds, func(x Result) *time.Duration { return x.LastReadP50 })
	r.LastReadPerPing = medianOf(rounds, func(x Result) *float64 { return x.LastReadPerPing })
	fair := figures(rounds, func(x Result) float64 { return x.Fairness })
	m := rounds[slices.Index(fair, median(fair))]
	r.Fairness, r.MinPerWorker, r.MaxPerWorker = m.Fairness, m.MinPerWorker, m.MaxPerWorker
	return r
}

// figures is one figure of every round.
func figures[T any](rounds []Result, figure func(Result) T) []T {
	out := make([]T, len(rounds))
	for i, x := range rounds {
		out[i] = figure(x)
	}
	return out
}

// medianOf is the median of a figure over the rounds that measured it, n/a
// when none did.
func medianOf[T cmp.Ordered](rounds []Result, figure func(Result) *T) *T {
	var values []T
	for _, x := range rounds {
		if v := figure(x); v != nil {
			values = append(values, *v)
		}
	}
	if len(values) == 0 {
		return nil
	}
	m := median(values)
	return &m
}
