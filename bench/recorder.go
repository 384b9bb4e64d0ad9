package bench

import (
	"sync"
	"sync/atomic"
	"time"
)

// recorder is what the workers of one run share about each name: the
// weight its holders believe they hold (above the capacity is a violation:
// for a lock, two holders; for an RW lock, a writer with anyone; for a
// semaphore, more permits than it has), and who released it last and when
// (to time hand-offs).
type recorder struct {
	names      []nameState
	capacity   int64
	violations atomic.Int64
	// batches, when set (an RW scenario with fixed writers), has every
	// write's release open a readBatch of the reads it admits.
	batches bool
}

// readBatch is the reads one write's release admitted: those called
// before that release started and holding after it. last is the latest of
// them, from the start of the release.
type readBatch struct {
	reads int
	last  time.Duration
}

type nameState struct {
	occupancy atomic.Int64

	mu          sync.Mutex
	lastWorker  int
	lastRelease time.Time // zero until the first release
	lastWrite   time.Time // with batches: the last write's release
	writes      []readBatch
}

func newRecorder(names int, capacity int64) *recorder {
	return &recorder{names: make([]nameState, names), capacity: capacity}
}

// acquired notes that worker, which called Lock at called, holds weight of
// name since at. It is a hand-off when another worker released name last and this one
// was already waiting when that release started; the gap runs from the
// start of the release to at. A worker re-taking its own lock is no
// hand-off, and neither is taking a lock that sat free before Lock was
// called: that gap would time the workload, not the lock.
func (r *recorder) acquired(name, worker int, weight int64, called, at time.Time) (gap time.Duration, handoff bool) {
	s := &r.names[name]
	if s.occupancy.Add(weight) > r.capacity {
		r.violations.Add(1)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.batches && weight < r.capacity && called.Before(s.lastWrite) {
		b := &s.writes[len(s.writes)-1]
		b.reads++
		b.last = max(b.last, at.Sub(s.lastWrite))
	}
	// Before any release lastRelease is zero, so called is after it.
	if s.lastWorker == worker || called.After(s.lastRelease) {
		return 0, false
	}
	return at.Sub(s.lastRelease), true
}

// releasing notes that worker starts releasing its weight of name at at. It must run
// before the release is sent: once it is, the next holder may already be
// reading this record.
func (r *recorder) releasing(name, worker int, weight int64, at time.Time) {
	s := &r.names[name]
	s.occupancy.Add(-weight)
	s.mu.Lock()
	s.lastWorker, s.lastRelease = worker, at
	if r.batches && weight == r.capacity {
		s.lastWrite = at
		s.writes = append(s.writes, readBatch{})
	}
	s.mu.Unlock()
}

// lastReads is, for each write's release that admitted all of readers,
// the time from its start to the last of those reads holding.
func (r *recorder) lastReads(readers int) []time.Duration {
	var out []time.Duration
	for i := range r.names {
		s := &r.names[i]
		s.mu.Lock()
		for _, b := range s.writes {
			if b.reads == readers {
				out = append(out, b.last)
			}
		}
		s.mu.Unlock()
	}
	return out
}
