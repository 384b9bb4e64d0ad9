package bench

import (
	"context"
	"net"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/rlock"
)

// BatonName is the name of the algorithm under test; every other algorithm
// is a peer library or a polling recipe it is compared with.
const BatonName = "baton"

// WireName is baton in Redisson's RLock format (rlock.WithRedissonWire):
// the yardstick of baton's own format's server cost.
const WireName = "baton-redisson-wire"

// Locker is one process's way of taking named locks. It is the only thing
// that differs between the algorithms compared: the workers, their clients
// and the measurements are shared.
type Locker interface {
	// Lock blocks until name is held or ctx ends.
	Lock(ctx context.Context, name string) (Held, error)
	// Close releases what the Locker owns besides the worker's client.
	Close() error
}

// Held is a lock taken by a Locker.
type Held interface {
	// Unlock releases the lock; it fails when the lock was no longer held.
	Unlock(ctx context.Context) error
}

// Env is what one worker's Locker is built on.
type Env struct {
	// Client is the worker's own Redis client; the harness closes it.
	Client redis.UniversalClient
	// Nodes, in a quorum scenario, are the worker's own clients of the
	// quorum's independent servers, Client first; nil elsewhere. The
	// harness closes them.
	Nodes []redis.UniversalClient
	// Prefix starts every key of the run, so that runs never see each
	// other's keys.
	Prefix string
	// Count, when set, wraps a connection that a Locker dials itself (with
	// a client library of its own), so that the commands it writes are
	// counted like those of Client.
	Count func(net.Conn) net.Conn
	// Permits is the size of a semaphore scenario's semaphores; 0 elsewhere.
	Permits int64
	// Lease, when set, is the lease a holder keeps renewing, for a
	// PermitLocker whose permits have one: the leak measure's holder uses
	// a short one, so that a killed holder's permits return soon.
	Lease time.Duration
	// Wakes, in a semaphore scenario, is where the workers of the run count
	// their wake-ups and the grants they waited for; nil elsewhere.
	Wakes *WakeCounts
}

// WakeCounts is what the waiters of one run count: Grants, the
// acquisitions granted to a call that had waited for a release; Wakeups,
// the messages that woke a waiting call. A PermitLocker whose client hides
// its messages (baton's hub) sets ByPublish instead of counting Wakeups,
// when every PUBLISH or SPUBLISH it makes wakes one waiting client: the
// run then counts the server's calls of those.
type WakeCounts struct {
	Grants, Wakeups atomic.Int64
	ByPublish       atomic.Bool
}

// perGrant is the wake-ups per grant; n/a without grants, or when they are
// counted by the server's calls (server) and the server has no
// commandstats (nil).
func (w *WakeCounts) perGrant(server map[string]int64) *float64 {
	wakeups := w.Wakeups.Load()
	if w.ByPublish.Load() {
		if server == nil {
			return nil
		}
		wakeups = server["publish"] + server["spublish"]
	}
	return ratio(float64(wakeups), float64(w.Grants.Load()))
}

// RWLocker is one process's way of taking named read-write locks: Lock
// takes the write hold, RLock a read hold.
type RWLocker interface {
	Locker
	// RLock blocks until a read hold of name is held or ctx ends.
	RLock(ctx context.Context, name string) (Held, error)
}

// PermitLocker is one process's way of taking permits of named semaphores
// of Env.Permits permits.
type PermitLocker interface {
	// Acquire blocks until n permits of name are held or ctx ends; Unlock
	// of the Held returns them all.
	Acquire(ctx context.Context, name string, n int64) (Held, error)
	// Close releases what the PermitLocker owns besides the worker's client.
	Close() error
}

// MultiLocker is one process's way of taking sets of named locks, all or
// none.
type MultiLocker interface {
	// LockAll blocks until every one of names is held or ctx ends; Unlock
	// of the Held releases them all.
	LockAll(ctx context.Context, names []string) (Held, error)
	// Close releases what the MultiLocker owns besides the worker's client.
	Close() error
}

// Algorithm names the constructors of one contestant for the tables: New
// for the lock scenarios of Kind, NewRW for RW scenarios, NewSemaphore for
// semaphore scenarios, NewMulti for multi-lock scenarios. A Suite runs it
// on the scenarios of the kinds it has a constructor for.
type Algorithm struct {
	Name string
	// Kind is the one kind of lock scenario New serves, each on its own
	// target: KindLock (the zero Kind), KindReplicated (a master with a
	// replica) or KindQuorum (one lock on Env.Nodes).
	Kind         Kind
	New          func(Env) (Locker, error)
	NewRW        func(Env) (RWLocker, error)
	NewSemaphore func(Env) (PermitLocker, error)
	NewMulti     func(Env) (MultiLocker, error)
}

// serves reports whether a has a constructor for scenarios of kind k.
func (a Algorithm) serves(k Kind) bool {
	switch k {
	case KindRW:
		return a.NewRW != nil
	case KindSemaphore:
		return a.NewSemaphore != nil
	case KindMulti:
		return a.NewMulti != nil
	}
	return a.New != nil && a.Kind == k
}

// Algorithms returns baton, the peer libraries and the polling recipes, in
// table order. The package doc says how each is configured.
func Algorithms() []Algorithm {
	return []Algorithm{
		{Name: BatonName, New: newBaton()},
		{Name: "redsync", New: newRedsync()},
		{Name: redsyncRetry1ms, New: newRedsync(time.Millisecond)},
		{Name: "redislock-1ms", New: newRedislock(time.Millisecond)},
		{Name: "redislock-10ms", New: newRedislock(10 * time.Millisecond)},
		{Name: "rueidislock", New: newRueidislock},
		{Name: WireName, New: newBaton(rlock.WithRedissonWire(""))},
		{Name: "poll-10ms", New: pollWith(FixedSleep(10 * time.Millisecond))},
		{Name: "poll-1ms", New: pollWith(FixedSleep(time.Millisecond))},
		{Name: "poll-backoff", New: pollWith(FullJitter(BackoffBase, BackoffCap))},
	}
}

// batonLocker is one rlock.Client, as one process would have, with the
// default watchdog lease.
type batonLocker struct{ c *rlock.Client }

// newBaton makes baton's Locker constructor, with opts besides the run's
// key prefix.
func newBaton(opts ...rlock.Option) func(Env) (Locker, error) {
	return func(e Env) (Locker, error) {
		c, err := rlock.New(e.Client, append([]rlock.Option{rlock.WithKeyPrefix(e.Prefix)}, opts...)...)
		if err != nil {
			return nil, err
		}
		return batonLocker{c}, nil
	}
}

func (b batonLocker) Lock(ctx context.Context, name string) (Held, error) {
	return held(b.c.Lock(ctx, name))
}

func (b batonLocker) Close() error { return b.c.Close() }
