package bench

import (
	"context"
	"slices"

	"github.com/batonlock/baton/rlock"
)

// The contestants of the shared-resource scenarios.
const (
	// BatonRWName is baton's RWLock, the algorithm under test of the RW
	// scenarios.
	BatonRWName = "baton-rw"
	// RedissonRWName is the reader-preferring RW lock in Redisson's format
	// (redissonRW).
	RedissonRWName = "redisson-rw"
	// BatonPlainName is baton's plain lock taken for reads and writes alike:
	// what an RW lock must beat on reads.
	BatonPlainName = "baton-plain"
	// BatonSemaphoreName is baton's Semaphore, the algorithm under test of
	// the semaphore scenario.
	BatonSemaphoreName = "baton-semaphore"
	// CounterSemaphoreName is the counter semaphore in Redisson's RSemaphore
	// format (counterSemaphore).
	CounterSemaphoreName = "redisson-semaphore"
)

// RWAlgorithms returns the contestants of the RW scenarios, in table order.
func RWAlgorithms() []Algorithm {
	return []Algorithm{
		{Name: BatonRWName, NewRW: batonAs(func(b batonLocker) RWLocker { return batonRW{b} })},
		{Name: RedissonRWName, NewRW: newRedissonRW},
		{Name: BatonPlainName, NewRW: batonAs(func(b batonLocker) RWLocker { return batonPlain{b} })},
	}
}

// SemaphoreAlgorithms returns the contestants of the semaphore scenarios,
// in table order.
func SemaphoreAlgorithms() []Algorithm {
	return []Algorithm{
		{Name: BatonSemaphoreName, NewSemaphore: newBatonSemaphore},
		{Name: CounterSemaphoreName, NewSemaphore: newCounterSemaphore},
	}
}

// AllAlgorithms returns the contestants of every kind of scenario: those
// of Algorithms, RWAlgorithms, SemaphoreAlgorithms, ReplicaAlgorithms and
// MultiAlgorithms, in that order.
func AllAlgorithms() []Algorithm {
	return slices.Concat(Algorithms(), RWAlgorithms(), SemaphoreAlgorithms(), ReplicaAlgorithms(), MultiAlgorithms())
}

// taker is how a worker takes what its scenario asks for, whatever the kind
// of its algorithm's Locker: names holds one name, or a multi-lock
// scenario's set.
type taker struct {
	take  func(ctx context.Context, names []string, r request) (Held, error)
	close func() error
}

// newTaker builds algo's Locker for scenarios of kind k on e.
func newTaker(algo Algorithm, k Kind, e Env) (taker, error) {
	switch k {
	case KindRW:
		l, err := algo.NewRW(e)
		if err != nil {
			return taker{}, err
		}
		return taker{close: l.Close, take: func(ctx context.Context, names []string, r request) (Held, error) {
			if r.write {
				return l.Lock(ctx, names[0])
			}
			return l.RLock(ctx, names[0])
		}}, nil
	case KindSemaphore:
		l, err := algo.NewSemaphore(e)
		if err != nil {
			return taker{}, err
		}
		return taker{close: l.Close, take: func(ctx context.Context, names []string, r request) (Held, error) {
			return l.Acquire(ctx, names[0], r.weight)
		}}, nil
	case KindMulti:
		l, err := algo.NewMulti(e)
		if err != nil {
			return taker{}, err
		}
		return taker{close: l.Close, take: func(ctx context.Context, names []string, _ request) (Held, error) {
			return l.LockAll(ctx, names)
		}}, nil
	}
	l, err := algo.New(e)
	if err != nil {
		return taker{}, err
	}
	return taker{close: l.Close, take: func(ctx context.Context, names []string, _ request) (Held, error) {
		return l.Lock(ctx, names[0])
	}}, nil
}

// batonAs builds baton's Locker, with its defaults, and makes it an
// RWLocker with as.
func batonAs(as func(batonLocker) RWLocker) func(Env) (RWLocker, error) {
	return func(e Env) (RWLocker, error) {
		l, err := newBaton()(e)
		if err != nil {
			return nil, err
		}
		return as(l.(batonLocker)), nil
	}
}

// batonRW is baton's RWLock on one rlock.Client, as one process would have,
// with the default watchdog lease.
type batonRW struct{ batonLocker }

func (b batonRW) Lock(ctx context.Context, name string) (Held, error) {
	return held(b.c.RWLock(name).Lock(ctx))
}

func (b batonRW) RLock(ctx context.Context, name string) (Held, error) {
	return held(b.c.RWLock(name).RLock(ctx))
}

// batonPlain is baton's plain lock, taken for a read as for a write.
type batonPlain struct{ batonLocker }

func (b batonPlain) RLock(ctx context.Context, name string) (Held, error) { return b.Lock(ctx, name) }

// batonSemaphore is baton's Semaphore on one rlock.Client, as one process
// would have, with the default watchdog lease, or Env.Lease as the
// watchdog's lease.
type batonSemaphore struct {
	c       *rlock.Client
	permits int64
}

func newBatonSemaphore(e Env) (PermitLocker, error) {
	var opts []rlock.Option
	if e.Lease > 0 {
		opts = append(opts, rlock.WithWatchdogLease(e.Lease))
	}
	if w := e.Wakes; w != nil {
		// A grant message goes to one client's grant line, and in the
		// bench a client has one waiter.
		w.ByPublish.Store(true)
		opts = append(opts, rlock.WithObserver(rlock.Observer{Acquired: func(a rlock.Acquire) {
			if a.Kind == rlock.HandedOff {
				w.Grants.Add(1)
			}
		}}))
	}
	l, err := newBaton(opts...)(e)
	if err != nil {
		return nil, err
	}
	return batonSemaphore{c: l.(batonLocker).c, permits: e.Permits}, nil
}

func (s batonSemaphore) Acquire(ctx context.Context, name string, n int64) (Held, error) {
	p, err := s.c.Semaphore(name, s.permits).Acquire(ctx, n)
	if err != nil {
		return nil, err
	}
	return permitHeld{p}, nil
}

func (s batonSemaphore) Close() error { return s.c.Close() }

// permitHeld is a *rlock.Permit as a Held: Unlock releases its permits.
type permitHeld struct{ p *rlock.Permit }

func (h permitHeld) Unlock(ctx context.Context) error { return h.p.Release(ctx) }

// held is a *rlock.Lock as a Held: nil, not a nil pointer, on an error.
func held(l *rlock.Lock, err error) (Held, error) {
	if err != nil {
		return nil, err
	}
	return l, nil
}
