package bench

import (
	"context"
	"crypto/rand"
	_ "embed"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The Redisson-style baselines of the shared-resource scenarios, written for
// the bench from the key formats Redisson documents (its Lua is not copied):
// RReadWriteLock, reader-preferring, and RSemaphore, a bare counter. Both
// wake their waiters as Redisson does: a waiter that fails subscribes to the
// resource's channel, and tries again on every message (and, for the RW
// lock, when the lock's TTL runs out). Each worker is one Redisson instance
// with one waiting thread, so a message wakes every waiting worker.
//
// Two simplifications, both in the baselines' favour: a worker stays
// subscribed once it has waited, where Redisson unsubscribes when its last
// waiter leaves (a SUBSCRIBE and UNSUBSCRIBE per contended wait); and no
// watchdog renews the holds, since every run ends long before their lease
// (redissonLease, Redisson's default watchdog timeout).

// redissonLease is the lease of every hold: Redisson's default
// lockWatchdogTimeout.
const redissonLease = 30 * time.Second

// redissonUnlockMessage is what an unlock publishes: Redisson's
// LockPubSub.UNLOCK_MESSAGE.
const redissonUnlockMessage = "0"

var (
	//go:embed lua/redisson_rw_read.lua
	redissonReadLua string
	//go:embed lua/redisson_rw_write.lua
	redissonWriteLua string
	//go:embed lua/redisson_rw_unlock_read.lua
	redissonUnlockReadLua string
	//go:embed lua/redisson_rw_unlock_write.lua
	redissonUnlockWriteLua string
	//go:embed lua/redisson_semaphore_acquire.lua
	counterAcquireLua string
	//go:embed lua/redisson_semaphore_release.lua
	counterReleaseLua string

	redissonRead        = redis.NewScript(redissonReadLua)
	redissonWrite       = redis.NewScript(redissonWriteLua)
	redissonUnlockRead  = redis.NewScript(redissonUnlockReadLua)
	redissonUnlockWrite = redis.NewScript(redissonUnlockWriteLua)
	counterAcquire      = redis.NewScript(counterAcquireLua)
	counterRelease      = redis.NewScript(counterReleaseLua)
)

// wakeups is one worker's subscriptions, one per channel it has waited on,
// each confirmed before its first use, so that no release published after
// a failed try can be missed.
type wakeups struct {
	rdb    redis.UniversalClient
	counts *WakeCounts // nil: nobody counts
	mu     sync.Mutex  // guards subs
	subs   map[string]*subscription
}

// subscription turns the messages of one channel into wake-ups: any number
// of messages since the last look make one, as a waiter only needs to know
// that it should try again.
type subscription struct {
	ps   *redis.PubSub
	wake chan struct{} // holds at most one wake-up
	done chan struct{} // closed when the forwarding goroutine ends
}

// newWakeups makes a worker's subscriptions; counts, when not nil, gets
// its wake-ups and the grants they led to.
func newWakeups(rdb redis.UniversalClient, counts *WakeCounts) *wakeups {
	return &wakeups{rdb: rdb, counts: counts, subs: map[string]*subscription{}}
}

// messages is the wake-up stream of channel, subscribed on first use. The
// subscription outlives the wait that asked for it, so the end of ctx does
// not cut its dial short (the client's own timeouts bound it).
func (w *wakeups) messages(ctx context.Context, channel string) (<-chan struct{}, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if sub, ok := w.subs[channel]; ok {
		return sub.wake, nil
	}
	ctx = context.WithoutCancel(ctx)
	ps := w.rdb.Subscribe(ctx, channel)
	if _, err := ps.Receive(ctx); err != nil { // the confirmation
		_ = ps.Close()
		return nil, err
	}
	sub := &subscription{ps: ps, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(sub.done)
		for range ps.Channel() { // ends when ps is closed
			select {
			case sub.wake <- struct{}{}:
			default:
			}
		}
	}()
	w.subs[channel] = sub
	return sub.wake, nil
}

// Close ends every subscription and waits for their goroutines.
func (w *wakeups) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []error
	for _, sub := range w.subs {
		errs = append(errs, sub.ps.Close())
		<-sub.done
	}
	clear(w.subs)
	return errors.Join(errs...)
}

// acquire runs try until it succeeds, as a Redisson waiter does: once, then
// subscribed to channel, again after every message on it, or after the wait
// try returned (none when it is not positive), until ctx ends.
func (w *wakeups) acquire(ctx context.Context, channel string, try func(context.Context) (bool, time.Duration, error)) error {
	ok, _, err := try(ctx)
	if err != nil || ok {
		return err
	}
	msgs, err := w.messages(ctx, channel)
	if err != nil {
		return err
	}
	for {
		select { // a wake-up from before this try is stale: the try sees what it announced
		case <-msgs:
		default:
		}
		ok, retry, err := try(ctx)
		if err != nil || ok {
			if ok && w.counts != nil {
				w.counts.Grants.Add(1)
			}
			return err
		}
		if err := w.awaitWakeup(ctx, msgs, retry); err != nil {
			return err
		}
	}
}

// awaitWakeup waits for a wake-up on msgs, which it counts, or for retry
// when positive, or until ctx ends (its error).
func (w *wakeups) awaitWakeup(ctx context.Context, msgs <-chan struct{}, retry time.Duration) error {
	var timeout <-chan time.Time
	if retry > 0 {
		t := time.NewTimer(retry)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-msgs:
		if w.counts != nil {
			w.counts.Wakeups.Add(1)
		}
	case <-timeout:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// redissonRW is the reader-preferring RW lock in Redisson's RReadWriteLock
// format (lua/redisson_rw_*.lua); one per worker, whose random ID stands for
// Redisson's instance ID and thread ID.
type redissonRW struct {
	rdb    redis.UniversalClient
	prefix string
	id     string
	*wakeups
}

func newRedissonRW(e Env) (RWLocker, error) {
	return &redissonRW{rdb: e.Client, prefix: e.Prefix, id: rand.Text(), wakeups: newWakeups(e.Client, nil)}, nil
}

// redissonKeys are one RW lock's key, the base of its timeout keys, and its
// channel, named as Redisson names them.
func (l *redissonRW) keys(name string) (lock, base, channel string) {
	lock = l.prefix + name
	return lock, "{" + lock + "}", "redisson_rwlock:{" + lock + "}"
}

func (l *redissonRW) Lock(ctx context.Context, name string) (Held, error) {
	lock, _, channel := l.keys(name)
	writer := l.id + ":write"
	err := l.acquire(ctx, channel, func(ctx context.Context) (bool, time.Duration, error) {
		return pttlOrGranted(redissonWrite.Run(ctx, l.rdb, []string{lock}, redissonLease.Milliseconds(), writer))
	})
	if err != nil {
		return nil, err
	}
	return redissonHeld{rdb: l.rdb, script: redissonUnlockWrite, keys: []string{lock, channel},
		args: []any{redissonUnlockMessage, redissonLease.Milliseconds(), writer}}, nil
}

func (l *redissonRW) RLock(ctx context.Context, name string) (Held, error) {
	lock, base, channel := l.keys(name)
	err := l.acquire(ctx, channel, func(ctx context.Context) (bool, time.Duration, error) {
		return pttlOrGranted(redissonRead.Run(ctx, l.rdb, []string{lock, base}, redissonLease.Milliseconds(), l.id, l.id+":write"))
	})
	if err != nil {
		return nil, err
	}
	return redissonHeld{rdb: l.rdb, script: redissonUnlockRead, keys: []string{lock, channel, base},
		args: []any{redissonUnlockMessage, l.id}}, nil
}

// pttlOrGranted reads an acquire script's reply: nil when granted, else the
// lock's PTTL in milliseconds, the longest a waiter waits before trying
// again.
func pttlOrGranted(cmd *redis.Cmd) (bool, time.Duration, error) {
	ms, err := cmd.Int64()
	if errors.Is(err, redis.Nil) {
		return true, 0, nil
	}
	return false, time.Duration(ms) * time.Millisecond, err
}

// redissonHeld is a hold of redissonRW: its release script and arguments.
type redissonHeld struct {
	rdb    redis.UniversalClient
	script *redis.Script
	keys   []string
	args   []any
}

func (h redissonHeld) Unlock(ctx context.Context) error {
	err := h.script.Run(ctx, h.rdb, h.keys, h.args...).Err()
	if errors.Is(err, redis.Nil) {
		return errNotHeld
	}
	return err
}

// counterSemaphore is the counter semaphore in Redisson's RSemaphore format
// (lua/redisson_semaphore_*.lua): a string of the permits available, set to
// the size by the first worker that finds none (Redisson's trySetPermits).
type counterSemaphore struct {
	rdb     redis.UniversalClient
	prefix  string
	permits int64
	set     sync.Map // names whose size this worker has set or found set
	*wakeups
}

func newCounterSemaphore(e Env) (PermitLocker, error) {
	if e.Permits < 1 {
		return nil, errors.New("bench: a semaphore needs Env.Permits ≥ 1")
	}
	return &counterSemaphore{rdb: e.Client, prefix: e.Prefix, permits: e.Permits, wakeups: newWakeups(e.Client, e.Wakes)}, nil
}

func (s *counterSemaphore) Acquire(ctx context.Context, name string, n int64) (Held, error) {
	key := s.prefix + name
	channel := "redisson_sc:{" + key + "}"
	if _, done := s.set.Load(name); !done {
		if err := s.rdb.SetNX(ctx, key, s.permits, 0).Err(); err != nil {
			return nil, err
		}
		s.set.Store(name, true)
	}
	err := s.acquire(ctx, channel, func(ctx context.Context) (bool, time.Duration, error) {
		taken, err := counterAcquire.Run(ctx, s.rdb, []string{key}, n).Int()
		return taken == 1, 0, err // no TTL: only a release wakes a waiter
	})
	if err != nil {
		return nil, err
	}
	return counterHeld{rdb: s.rdb, keys: []string{key, channel}, n: strconv.FormatInt(n, 10)}, nil
}

// counterHeld is permits taken from a counterSemaphore.
type counterHeld struct {
	rdb  redis.UniversalClient
	keys []string
	n    string
}

// Unlock adds the permits back; a counter cannot tell whether they were
// held, so it never fails for that.
func (h counterHeld) Unlock(ctx context.Context) error {
	return counterRelease.Run(ctx, h.rdb, h.keys, h.n).Err()
}
