package bench

import (
	"context"
	"crypto/rand"
	_ "embed"
	"errors"
	mrand "math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"
)

// The polling baselines follow the single-instance recipe that Redis's own
// documentation and most client libraries publish: SET key token NX with a
// lease, retried after a sleep until it succeeds, released by
// compare-and-delete.

const (
	// PollLease is the expiry the baselines set on their keys. It equals
	// baton's default watchdog lease; every hold in these scenarios ends
	// long before it, so it never frees a lock by itself.
	PollLease = 30 * time.Second
	// BackoffBase is the first ceiling of poll-backoff's sleep.
	BackoffBase = time.Millisecond
	// BackoffCap bounds poll-backoff's sleep.
	BackoffCap = 50 * time.Millisecond
)

var (
	//go:embed lua/unlock.lua
	unlockLua    string
	unlockScript = redis.NewScript(unlockLua)

	errNotHeld = errors.New("bench: lock not held at unlock (lease expired)")
)

// Backoff returns how long to sleep after failed attempt number attempt
// (0 for the first) of one Lock call.
type Backoff func(attempt int) time.Duration

// FixedSleep always sleeps d, like the simplest published loops.
func FixedSleep(d time.Duration) Backoff {
	return func(int) time.Duration { return d }
}

// FullJitter is capped exponential backoff with full jitter: a uniform sleep
// in [0, min(ceiling, base·2^attempt)). Randomising the whole interval keeps
// waiters that failed together from retrying together.
func FullJitter(base, ceiling time.Duration) Backoff {
	return func(attempt int) time.Duration {
		limit := ceiling
		if attempt < 32 { // beyond that the shift overflows; the cap applies anyway
			limit = min(ceiling, base<<attempt)
		}
		return mrand.N(limit)
	}
}

func pollWith(backoff Backoff) func(Env) (Locker, error) {
	return func(e Env) (Locker, error) {
		return pollLocker{rdb: e.Client, prefix: e.Prefix, backoff: backoff}, nil
	}
}

type pollLocker struct {
	rdb     redis.UniversalClient
	prefix  string
	backoff Backoff
}

type pollHeld struct {
	rdb        redis.UniversalClient
	key, token string
}

func (p pollLocker) Lock(ctx context.Context, name string) (Held, error) {
	h := &pollHeld{rdb: p.rdb, key: p.prefix + name, token: rand.Text()}
	for attempt := 0; ; attempt++ {
		ok, err := p.rdb.SetNX(ctx, h.key, h.token, PollLease).Result()
		if err != nil {
			return nil, err
		}
		if ok {
			return h, nil
		}
		if err := sleep(ctx, p.backoff(attempt)); err != nil {
			return nil, err
		}
	}
}

func (pollLocker) Close() error { return nil }

func (h *pollHeld) Unlock(ctx context.Context) error {
	n, err := unlockScript.Run(ctx, h.rdb, []string{h.key}, h.token).Int()
	if err == nil && n == 0 {
		err = errNotHeld
	}
	return err
}

// sleep waits d or until ctx ends, whichever is first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
