package watchdog

import (
	"container/heap"
	"time"
)

// Lease is one watched lease, as returned by Scheduler.Watch.
type Lease struct {
	owner leaseOwner

	// Guarded by the owner's mutex.
	deadline time.Time
	index    int // position in the owner's heap; -1 once stopped or lost
	onLost   func(cause error)
	lastErr  error // the last transient renew error since the last success
}

// leaseOwner is the Scheduler, whatever its item type.
type leaseOwner interface {
	stop(l *Lease) bool
	deadlineOf(l *Lease) time.Time
}

// Stop unregisters the lease. Once it returns, the lease is in no Renew
// batch formed afterwards, and its onLost is never called, even if a call
// already in flight answers ErrNotHeld for it: the caller may have released
// the lock itself. Stop does not wait for that call. It reports whether the
// lease was still live; false means it was already stopped or lost (in which
// case onLost has been, or is being, called). Stop is idempotent.
func (l *Lease) Stop() bool { return l.owner.stop(l) }

// Deadline returns the local validity deadline: when the last successful
// renewal (or the command that took the lease) was sent, plus Lease minus
// Margin. After
// a loss or Stop it keeps its last value.
func (l *Lease) Deadline() time.Time { return l.owner.deadlineOf(l) }

func (s *Scheduler[T]) stop(l *Lease) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.index < 0 {
		return false
	}
	heap.Remove(&s.leases, l.index)
	return true
}

func (s *Scheduler[T]) deadlineOf(l *Lease) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return l.deadline
}

// entry is a live lease with its item.
type entry[T any] struct {
	Lease
	item T
}

// deadlineHeap orders live leases by deadline, so expiry looks only at the
// top and a renewal costs O(log n). It implements heap.Interface.
type deadlineHeap[T any] []*entry[T]

func (h deadlineHeap[T]) Len() int           { return len(h) }
func (h deadlineHeap[T]) Less(i, j int) bool { return h[i].deadline.Before(h[j].deadline) }

func (h deadlineHeap[T]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}

func (h *deadlineHeap[T]) Push(x any) {
	e := x.(*entry[T])
	e.index = len(*h)
	*h = append(*h, e)
}

func (h *deadlineHeap[T]) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil // let a stopped lease be collected
	e.index = -1
	*h = old[:len(old)-1]
	return e
}
