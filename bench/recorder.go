package bench

import (
	"sync"
	"sync/atomic"
	"time"
)

// recorder is what the workers of one run share about each lock name: how
// many of them believe they hold it (more than one is a mutual-exclusion
// violation), and who released it last and when (to time hand-offs).
type recorder struct {
	names      []nameState
	violations atomic.Int64
}

type nameState struct {
	occupancy atomic.Int32

	mu          sync.Mutex
	lastWorker  int
	lastRelease time.Time // zero until the first release
}

func newRecorder(names int) *recorder {
	return &recorder{names: make([]nameState, names)}
}

// acquired notes that worker, which called Lock at called, holds name since
// at. It is a hand-off when another worker released name last and this one
// was already waiting when that release started; the gap runs from the
// start of the release to at. A worker re-taking its own lock is no
// hand-off, and neither is taking a lock that sat free before Lock was
// called: that gap would time the workload, not the lock.
func (r *recorder) acquired(name, worker int, called, at time.Time) (gap time.Duration, handoff bool) {
	s := &r.names[name]
	if s.occupancy.Add(1) > 1 {
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

// releasing notes that worker starts releasing name at at. It must run
// before the release is sent: once it is, the next holder may already be
// reading this record.
func (r *recorder) releasing(name, worker int, at time.Time) {
	s := &r.names[name]
	s.occupancy.Add(-1)
	s.mu.Lock()
	s.lastWorker, s.lastRelease = worker, at
	s.mu.Unlock()
}
