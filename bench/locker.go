package bench

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/rlock"
)

// BatonName is the name of the algorithm under test; every other algorithm
// is a baseline it is compared with.
const BatonName = "baton"

// Locker is one process's way of taking named locks. It is the only thing
// that differs between the algorithms compared: the clients, the workers and
// the measurements are shared.
type Locker interface {
	// Lock blocks until name is held or ctx ends.
	Lock(ctx context.Context, name string) (Held, error)
	// Close releases what the Locker owns besides its Redis client.
	Close() error
}

// Held is a lock taken by a Locker.
type Held interface {
	// Unlock releases the lock; it fails when the lock was no longer held.
	Unlock(ctx context.Context) error
}

// Algorithm names a Locker constructor for the tables.
type Algorithm struct {
	Name string
	// New returns a Locker that takes locks through rdb, with every key
	// under prefix so that runs never see each other's keys.
	New func(rdb redis.UniversalClient, prefix string) (Locker, error)
}

// Algorithms returns baton and the polling baselines, in table order.
func Algorithms() []Algorithm {
	return []Algorithm{
		{Name: BatonName, New: newBaton},
		{Name: "poll-10ms", New: pollWith(FixedSleep(10 * time.Millisecond))},
		{Name: "poll-1ms", New: pollWith(FixedSleep(time.Millisecond))},
		{Name: "poll-backoff", New: pollWith(FullJitter(BackoffBase, BackoffCap))},
	}
}

// batonLocker is one rlock.Client, as one process would have, with the
// default watchdog lease.
type batonLocker struct{ c *rlock.Client }

func newBaton(rdb redis.UniversalClient, prefix string) (Locker, error) {
	c, err := rlock.New(rdb, rlock.WithKeyPrefix(prefix))
	if err != nil {
		return nil, err
	}
	return batonLocker{c}, nil
}

func (b batonLocker) Lock(ctx context.Context, name string) (Held, error) {
	l, err := b.c.Lock(ctx, name)
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (b batonLocker) Close() error { return b.c.Close() }
