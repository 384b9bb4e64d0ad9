package watchdog

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// loss is an onLost call decided under the mutex and made outside it, so
// that onLost may call Stop or Watch.
type loss struct {
	onLost func(cause error)
	cause  error
}

func (s *Scheduler[T]) deliver(losses []loss) {
	s.lost.Add(uint64(len(losses)))
	for _, l := range losses {
		if l.onLost != nil {
			l.onLost(l.cause)
		}
	}
}

// expire loses every lease whose deadline is not after now.
func (s *Scheduler[T]) expire(now time.Time) {
	var losses []loss
	s.mu.Lock()
	for len(s.leases) > 0 && !now.Before(s.leases[0].deadline) {
		e := heap.Pop(&s.leases).(*entry[T])
		losses = append(losses, loss{e.onLost, expiredCause(e.lastErr)})
	}
	s.mu.Unlock()
	s.deliver(losses)
}

func expiredCause(last error) error {
	if last == nil {
		return ErrExpired
	}
	return fmt.Errorf("%w: last renew error: %w", ErrExpired, last)
}

// startRound starts a goroutine renewing the leases due at now, which
// signals done when it ends. It reports whether it started one.
func (s *Scheduler[T]) startRound(now time.Time, done chan<- struct{}) bool {
	due := s.dueAt(now)
	if len(due) == 0 {
		return false
	}
	s.wg.Go(func() {
		s.renewRound(due)
		done <- struct{}{} // buffered, and run awaits one round at a time
	})
	return true
}

// dueAt lists the leases whose last renewal was sent at or before
// now - tick/2, or every live lease once after RenewNow, earliest deadline
// first, so that leases a timed-out round did not reach go first in the
// next.
func (s *Scheduler[T]) dueAt(now time.Time) []*entry[T] {
	cutoff := s.dueCutoff(now)
	s.mu.Lock()
	defer s.mu.Unlock()
	all := s.all
	s.all = false
	var due []*entry[T]
	for _, e := range s.leases {
		if all || !e.deadline.After(cutoff) {
			due = append(due, e)
		}
	}
	slices.SortFunc(due, func(a, b *entry[T]) int { return a.deadline.Compare(b.deadline) })
	return due
}

// dueCutoff is the latest deadline of a lease due at now: deadline = last
// renewal + valid, so a lease is due when its last renewal was sent at or
// before now - tick/2.
func (s *Scheduler[T]) dueCutoff(now time.Time) time.Time { return now.Add(s.valid - s.tick/2) }

// renewRound renews due batch after batch. The whole round gets one tick, so
// it never delays the next tick's round by more than that.
func (s *Scheduler[T]) renewRound(due []*entry[T]) {
	ctx, cancel := context.WithTimeout(s.ctx, s.tick)
	defer cancel()
	batch := make([]*entry[T], 0, min(len(due), s.batchSize))
	items := make([]T, 0, cap(batch))
	var round Round
	start := time.Now()
	for len(due) > 0 {
		batch, items, due = s.nextBatch(batch[:0], items[:0], due)
		sent := time.Now()
		round.add(s.apply(batch, s.call(ctx, items), sent))
	}
	if s.onRound != nil && round.Leases > 0 {
		round.Duration = time.Since(start)
		s.onRound(round)
	}
}

func (r *Round) add(b Round) {
	r.Leases += b.Leases
	r.Failed += b.Failed
	r.Lost += b.Lost
}

// nextBatch takes up to batchSize leases from due that are still live: a
// lease stopped while an earlier batch was in flight is left out.
func (s *Scheduler[T]) nextBatch(batch []*entry[T], items []T, due []*entry[T]) ([]*entry[T], []T, []*entry[T]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(due) > 0 && len(batch) < s.batchSize {
		if e := due[0]; e.index >= 0 {
			batch = append(batch, e)
			items = append(items, e.item)
		}
		due = due[1:]
	}
	return batch, items, due
}

// call makes one Renew call and returns exactly one answer per item.
func (s *Scheduler[T]) call(ctx context.Context, items []T) []error {
	if len(items) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return repeat(fmt.Errorf("watchdog: renewal not sent: %w", err), len(items))
	}
	s.calls.Add(1)
	results := s.renew(ctx, items)
	if len(results) != len(items) {
		err := fmt.Errorf("watchdog: renew returned %d results for %d items", len(results), len(items))
		return repeat(err, len(items))
	}
	return results
}

func repeat(err error, n int) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// apply records the answers to a batch sent at sent, and reports them.
func (s *Scheduler[T]) apply(batch []*entry[T], results []error, sent time.Time) Round {
	var losses []loss
	var renewed []*entry[T]
	round := Round{Leases: len(batch)}
	deadline := sent.Add(s.valid)
	s.mu.Lock()
	now := time.Now()
	for i, e := range batch {
		if e.index < 0 {
			continue // stopped or lost meanwhile: the answer no longer matters
		}
		switch err := results[i]; {
		case err == nil && now.Before(e.deadline):
			e.deadline = deadline
			e.lastErr = nil
			heap.Fix(&s.leases, e.index)
			s.renewed.Add(1)
			renewed = append(renewed, e)
		case err == nil:
			// Answered at or after the deadline: the lease was lost then,
			// and expire, due now, reports it.
		case errors.Is(err, ErrNotHeld):
			heap.Remove(&s.leases, e.index)
			losses = append(losses, loss{e.onLost, err})
			round.Lost++
		default:
			e.lastErr = err
			s.failed.Add(1)
			round.Failed++
		}
	}
	s.mu.Unlock()
	if s.onRenewed != nil {
		for _, e := range renewed {
			s.onRenewed(e.item, deadline)
		}
	}
	s.deliver(losses)
	return round
}
