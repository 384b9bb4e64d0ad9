package watchdog

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

var (
	// ErrNotHeld is what a RenewFunc wraps for an item whose lock no longer
	// exists. The lease is lost at once, with that error as the cause.
	ErrNotHeld = errors.New("watchdog: lease not held")
	// ErrExpired is the loss cause when a lease's local deadline passed
	// before a renewal succeeded. It is wrapped together with the last
	// renew error, if any, so that error stays visible.
	ErrExpired = errors.New("watchdog: lease expired before renewal")
	// ErrClosed is returned by Watch after Close.
	ErrClosed = errors.New("watchdog: closed")
	// ErrInvalidConfig is wrapped by New's errors, with the detail.
	ErrInvalidConfig = errors.New("watchdog: invalid config")
)

// DefaultBatchSize is the batch size used when Config.BatchSize is 0.
const DefaultBatchSize = 1000

// RenewFunc renews a batch of leases, ideally in one round trip. It returns
// one error per item, in order: nil if renewed, an error wrapping ErrNotHeld
// if the lease no longer exists, any other error if the outcome is unknown
// (the item is retried next tick). A result of the wrong length counts as a
// transient error for every item. It must return soon after ctx is done,
// and must not keep batch after it returns: the slice is reused.
type RenewFunc[T any] func(ctx context.Context, batch []T) []error

// Config configures a Scheduler.
type Config[T any] struct {
	// Lease is how long one renewal keeps a lease valid. The scheduler
	// ticks every Lease/3. Required, at least 3ns.
	Lease time.Duration
	// Margin is taken off every deadline, for the clocks of this process
	// and of the store running at different rates: a lease is valid
	// locally until its last renewal was sent plus Lease minus Margin.
	// It must be smaller than Lease.
	Margin time.Duration
	// BatchSize is the most items in one Renew call; 0 means
	// DefaultBatchSize.
	BatchSize int
	// Renew renews a batch of leases. Required.
	Renew RenewFunc[T]
	// OnRenewed, if set, is told each confirmed renewal with the lease's
	// new local deadline. It runs on a scheduler goroutine, outside the
	// scheduler's lock, and must not block; it may come just after the
	// lease was stopped.
	OnRenewed func(item T, deadline time.Time)
	// OnRound, if set, is told of every renewal round when it ends. It runs
	// on a scheduler goroutine and must not block.
	OnRound func(Round)
}

// Round describes one renewal round: the due leases sent in batches.
type Round struct {
	Leases   int           // leases sent
	Failed   int           // leases answered with a transient error, or not sent in time
	Lost     int           // leases answered as not held
	Duration time.Duration // from the first send to the last answer
}

func (c Config[T]) validate() error {
	switch {
	case c.Lease/3 <= 0:
		return fmt.Errorf("%w: Lease must be at least 3ns, got %v", ErrInvalidConfig, c.Lease)
	case c.Margin < 0 || c.Margin >= c.Lease:
		return fmt.Errorf("%w: Margin must be at least 0 and below Lease, got %v", ErrInvalidConfig, c.Margin)
	case c.BatchSize < 0:
		return fmt.Errorf("%w: BatchSize must not be negative, got %d", ErrInvalidConfig, c.BatchSize)
	case c.Renew == nil:
		return fmt.Errorf("%w: Renew is required", ErrInvalidConfig)
	}
	return nil
}

// Stats counts what a Scheduler has done since New.
type Stats struct {
	Ticks      uint64 // ticks of the schedule
	RenewCalls uint64 // Renew calls, one per batch
	Renewed    uint64 // items renewed
	Failed     uint64 // items answered with a transient error, or not sent in time
	Lost       uint64 // leases lost, by ErrNotHeld or expiry
}

// Scheduler renews the leases watched through it. It is safe for concurrent
// use. Close it to stop its goroutine.
type Scheduler[T any] struct {
	valid     time.Duration // Lease - Margin: how long one renewal is relied on
	tick      time.Duration
	batchSize int
	renew     RenewFunc[T]
	onRenewed func(T, time.Time)
	onRound   func(Round)

	ctx       context.Context // cancelled by Close; parent of every renew ctx
	cancel    context.CancelFunc
	wake      chan struct{} // tells run that Watch added a new earliest deadline
	due       chan struct{} // tells run that Watch added a lease due already: renew now
	wg        sync.WaitGroup
	closeOnce sync.Once

	mu         sync.Mutex
	closed     bool
	all        bool            // the next round renews every live lease, due or not (RenewNow)
	leases     deadlineHeap[T] // live leases only
	nextExpiry time.Time       // when run's expiry timer fires next

	ticks, calls, renewed, failed, lost atomic.Uint64
}

// New starts a Scheduler. The error wraps ErrInvalidConfig if cfg is not
// usable.
func New[T any](cfg Config[T]) (*Scheduler[T], error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Scheduler[T]{
		valid:     cfg.Lease - cfg.Margin,
		tick:      cfg.Lease / 3,
		batchSize: cfg.BatchSize,
		renew:     cfg.Renew,
		onRenewed: cfg.OnRenewed,
		onRound:   cfg.OnRound,
		ctx:       ctx,
		cancel:    cancel,
		wake:      make(chan struct{}, 1),
		due:       make(chan struct{}, 1),
	}
	s.wg.Go(s.run)
	return s, nil
}

// Watch registers a held lease for item. validFrom is when the command that
// took the lock was sent: the lease is valid until validFrom+Lease-Margin
// unless renewed. A lease due already (validFrom half a tick or more ago:
// a slow acquire) is renewed at once, not at the next tick, which may
// come too late for a renewal whose reply is lost to be sent again before
// the deadline. onLost, if not nil, is called at most once, from a goroutine of
// the scheduler, with a cause wrapping ErrNotHeld or ErrExpired; it must not
// block or call Close (Close waits for it), though it may call Stop or Watch.
// Watch returns ErrClosed after Close.
func (s *Scheduler[T]) Watch(item T, validFrom time.Time, onLost func(cause error)) (*Lease, error) {
	e := &entry[T]{Lease: Lease{owner: s, deadline: validFrom.Add(s.valid), onLost: onLost}, item: item}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	heap.Push(&s.leases, e)
	// Wake run only when its expiry timer would fire too late for this
	// deadline, or the lease is due. A fresh lease's deadline is a whole
	// lease away and the timer never sleeps past a tick, so the common
	// Watch wakes nobody: a goroutine wake-up per Lock would cost more
	// than the lock itself. run's loop re-arms the expiry timer whichever
	// channel woke it.
	due := !e.deadline.After(s.dueCutoff(time.Now()))
	early := e.deadline.Before(s.nextExpiry)
	s.mu.Unlock()
	switch {
	case due:
		signal(s.due)
	case early:
		signal(s.wake)
	}
	return &e.Lease, nil
}

// RenewNow has a round start at once (or, if one is in flight, as soon as
// it ends) that renews every live lease, due or not: for when the store may
// have lost leases (it restarted, or failed over), so that a lost lease is
// found by one round trip now, not by its next renewal a tick away. A
// lease not held is lost as in any round; the others are renewed.
func (s *Scheduler[T]) RenewNow() {
	s.mu.Lock()
	s.all = true
	s.mu.Unlock()
	signal(s.due)
}

// signal wakes run through ch, unless a wake-up is pending on it already.
func signal(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Len reports how many leases are live: watched, not stopped and not lost.
func (s *Scheduler[T]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.leases)
}

// Stats returns the counters so far.
func (s *Scheduler[T]) Stats() Stats {
	return Stats{
		Ticks:      s.ticks.Load(),
		RenewCalls: s.calls.Load(),
		Renewed:    s.renewed.Load(),
		Failed:     s.failed.Load(),
		Lost:       s.lost.Load(),
	}
}

// Close stops every lease without calling onLost, cancels the renew call in
// flight, and returns once all the scheduler's goroutines have exited. It is
// idempotent and always returns nil.
func (s *Scheduler[T]) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		for _, e := range s.leases {
			e.index = -1 // answers still in flight are then ignored
		}
		s.leases = nil
		s.mu.Unlock()
		s.cancel()
		s.wg.Wait()
	})
	return nil
}

// run is the scheduler goroutine. It alone starts renewal rounds, so at most
// one is in flight; and it alone expires leases, on a timer armed for the
// earliest deadline, so a hanging round cannot delay a loss.
func (s *Scheduler[T]) run() {
	ticker := time.NewTicker(s.tick)
	defer ticker.Stop()
	expiry := time.NewTimer(s.untilEarliest())
	defer expiry.Stop()
	roundDone := make(chan struct{}, 1)
	running, pending := false, false
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-ticker.C:
			s.ticks.Add(1)
			pending = true // a tick during a round is served when the round ends
		case <-s.due:
			pending = true // as a tick
		case <-roundDone:
			running = false
		case <-s.wake:
		case <-expiry.C:
		}
		now := time.Now()
		// Expire first, so a lease at its deadline is lost, not renewed.
		s.expire(now)
		if pending && !running {
			pending = false
			running = s.startRound(now, roundDone)
		}
		expiry.Reset(s.untilEarliest())
	}
}

// untilEarliest is how long run may sleep before a deadline passes: until
// the earliest deadline, and never more than a tick. It records when that
// is, so Watch knows whether run must be woken sooner.
func (s *Scheduler[T]) untilEarliest() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.tick
	if len(s.leases) > 0 {
		d = min(d, time.Until(s.leases[0].deadline))
	}
	s.nextExpiry = time.Now().Add(d)
	return d
}
