package bench

import (
	"context"
	"crypto/rand"
	_ "embed"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// redissonMultiWait is how long Redisson's MultiLock.lock() tries per lock
// of the set before it starts over (RedissonMultiLock.lockInterruptibly:
// a wait of 1,500 ms per lock).
const redissonMultiWait = 1500 * time.Millisecond

var (
	//go:embed lua/redisson_lock.lua
	redissonLockLua string
	//go:embed lua/redisson_unlock.lua
	redissonUnlockLua string

	redissonLock   = redis.NewScript(redissonLockLua)
	redissonUnlock = redis.NewScript(redissonUnlockLua)
)

// redissonMulti is Redisson's MultiLock algorithm, written for the bench
// from RedissonMultiLock (its code is not copied), over locks in
// Redisson's RLock format (lua/redisson_lock.lua). lock() tries in rounds
// of 1,500 ms per lock; a round takes the locks one by one in the caller's
// order, each with RLock.tryLock(the round's time left): it waits for that
// lock, holding those it has, woken by the unlock message or the lock's
// TTL. When a lock is not had in time, it releases every lock it holds and
// starts over at the first; when the round's time runs out, it releases
// them and starts a new round. One per worker, whose random ID stands for
// Redisson's instance and thread IDs.
type redissonMulti struct {
	rdb    redis.UniversalClient
	prefix string
	id     string
	*wakeups
}

func newRedissonMulti(e Env) (MultiLocker, error) {
	return &redissonMulti{rdb: e.Client, prefix: e.Prefix, id: rand.Text() + ":1", wakeups: newWakeups(e.Client, nil)}, nil
}

// LockAll is MultiLock.lock(): rounds of tryLockAll until one holds the set.
func (m *redissonMulti) LockAll(ctx context.Context, names []string) (Held, error) {
	for {
		held, err := m.tryLockAll(ctx, names, time.Duration(len(names))*redissonMultiWait)
		if held != nil || err != nil {
			return held, err
		}
	}
}

// tryLockAll is MultiLock.tryLock(wait): nil, nil when wait ran out, with
// nothing held.
func (m *redissonMulti) tryLockAll(ctx context.Context, names []string, wait time.Duration) (Held, error) {
	deadline := time.Now().Add(wait)
	release := context.WithoutCancel(ctx) // a lock taken is always given back
	var taken redissonSet
	for i := 0; i < len(names); {
		lock, err := m.tryLock(ctx, names[i], deadline)
		switch {
		case err != nil:
			return nil, errors.Join(err, taken.Unlock(release))
		case lock != nil:
			taken = append(taken, lock)
			i++
		default: // not had in time: give back all and start over
			if err := taken.Unlock(release); err != nil {
				return nil, err
			}
			taken, i = nil, 0
		}
		if !time.Now().Before(deadline) { // checked after every lock, the last one too
			return nil, taken.Unlock(release)
		}
	}
	return taken, nil
}

// tryLock is RLock.tryLock(until deadline): one try, then tries again on
// each unlock message or when the lock's TTL ends, until deadline. nil,
// nil when the deadline came first. Only the waits end at the deadline: a
// script call it cut short could have taken the lock unseen.
func (m *redissonMulti) tryLock(ctx context.Context, name string, deadline time.Time) (Held, error) {
	lock := m.prefix + name
	channel := "redisson_lock__channel:{" + lock + "}"
	wait, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	err := m.acquire(wait, channel, func(context.Context) (bool, time.Duration, error) {
		return pttlOrGranted(redissonLock.Run(ctx, m.rdb, []string{lock}, redissonLease.Milliseconds(), m.id))
	})
	switch {
	case err == nil:
		return redissonHeld{rdb: m.rdb, script: redissonUnlock, keys: []string{lock, channel},
			args: []any{redissonUnlockMessage, redissonLease.Milliseconds(), m.id}}, nil
	case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		return nil, nil
	}
	return nil, err
}

// redissonSet is the locks a redissonMulti holds. Unlock releases them all
// at once, as MultiLock's unlockInner sends every release before it waits
// for any.
type redissonSet []Held

func (s redissonSet) Unlock(ctx context.Context) error {
	errs := make([]error, len(s))
	var wg sync.WaitGroup
	for i, h := range s {
		wg.Go(func() { errs[i] = h.Unlock(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
