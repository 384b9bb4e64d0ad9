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
}

type nameState struct {
	occupancy atomic.Int64

	mu          sync.Mutex
	lastWorker  int
	lastRelease time.Time // zero until the first release
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
	s.mu.Unlock()
}
