package bench

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// The peer libraries, each configured as the package doc says: its defaults,
// except that no peer may give up waiting before the run's context ends.

// PeerModules are the modules of the peer libraries, whose versions the
// report records.
var PeerModules = []string{
	"github.com/go-redsync/redsync/v4",
	"github.com/bsm/redislock",
	"github.com/redis/rueidis",
}

// redsyncLocker is redsync on one pool per node: the worker's client, a
// quorum of one, or in a quorum scenario its client of each node (Redlock).
// A Mutex holds one acquisition's value, so each Lock makes a new one.
type redsyncLocker struct {
	rs   *redsync.Redsync
	pfx  string
	opts []redsync.Option
}

// newRedsync keeps redsync's defaults (8 s expiry, a random 50–250 ms
// between tries) but for the number of tries, which by default (32) gives up
// after about five seconds; with a retry delay, every try waits that long.
func newRedsync(retryDelay ...time.Duration) func(Env) (Locker, error) {
	return func(e Env) (Locker, error) {
		opts := []redsync.Option{redsync.WithTries(math.MaxInt32)}
		for _, d := range retryDelay {
			opts = append(opts, redsync.WithRetryDelay(d))
		}
		nodes := e.Nodes
		if nodes == nil {
			nodes = []redis.UniversalClient{e.Client}
		}
		pools := make([]redsyncredis.Pool, len(nodes))
		for i, n := range nodes {
			pools[i] = goredis.NewPool(n)
		}
		return redsyncLocker{rs: redsync.New(pools...), pfx: e.Prefix, opts: opts}, nil
	}
}

func (l redsyncLocker) Lock(ctx context.Context, name string) (Held, error) {
	m := l.rs.NewMutex(l.pfx+name, l.opts...)
	if err := m.LockContext(ctx); err != nil {
		return nil, err
	}
	return redsyncHeld{m}, nil
}

func (redsyncLocker) Close() error { return nil }

type redsyncHeld struct{ m *redsync.Mutex }

func (h redsyncHeld) Unlock(ctx context.Context) error {
	ok, err := h.m.UnlockContext(ctx)
	if err == nil && !ok {
		err = errNotHeld
	}
	return err
}

// redislockLocker is bsm/redislock with a linear backoff. Obtain gives up at
// the context's deadline, or at the lock's TTL when the context has none;
// the TTL is PollLease, longer than any run.
type redislockLocker struct {
	c       *redislock.Client
	pfx     string
	backoff time.Duration
}

func newRedislock(backoff time.Duration) func(Env) (Locker, error) {
	return func(e Env) (Locker, error) {
		return redislockLocker{c: redislock.New(e.Client), pfx: e.Prefix, backoff: backoff}, nil
	}
}

func (l redislockLocker) Lock(ctx context.Context, name string) (Held, error) {
	lock, err := l.c.Obtain(ctx, l.pfx+name, PollLease, &redislock.Options{RetryStrategy: redislock.LinearBackoff(l.backoff)})
	if err != nil {
		return nil, err
	}
	return redislockHeld{lock}, nil
}

func (redislockLocker) Close() error { return nil }

type redislockHeld struct{ l *redislock.Lock }

func (h redislockHeld) Unlock(ctx context.Context) error { return h.l.Release(ctx) }

// rueidisLocker is rueidislock with one key per lock (KeyMajority 1) and
// its other defaults: a 5 s validity it extends in the background, waiters
// woken by client-side-caching invalidations (on a server without them,
// retries every 20 ms). It brings its own client,
// dialled to the same server as the worker's and counted the same way.
// It waits until the context ends.
type rueidisLocker struct{ l rueidislock.Locker }

func newRueidislock(e Env) (Locker, error) {
	opt, err := rueidisOption(e)
	if err != nil {
		return nil, err
	}
	lo := rueidislock.LockerOption{ClientOption: opt, KeyPrefix: strings.TrimSuffix(e.Prefix, ":"), KeyMajority: 1}
	l, err := rueidislock.NewLocker(lo)
	if errors.Is(err, rueidis.ErrNoCache) {
		// A server without client-side caching (miniredis): rueidislock
		// then retries every TryNextAfter (20 ms) instead of waiting for
		// an invalidation.
		lo.ClientOption.DisableCache = true
		l, err = rueidislock.NewLocker(lo)
	}
	if err != nil {
		return nil, err
	}
	return rueidisLocker{l}, nil
}

// rueidisOption reaches the server e.Client reaches, as the same user.
func rueidisOption(e Env) (rueidis.ClientOption, error) {
	o := rueidis.ClientOption{
		DialCtxFn: func(ctx context.Context, addr string, d *net.Dialer, tc *tls.Config) (net.Conn, error) {
			var conn net.Conn
			var err error
			if tc != nil {
				conn, err = (&tls.Dialer{NetDialer: d, Config: tc}).DialContext(ctx, "tcp", addr)
			} else {
				conn, err = d.DialContext(ctx, "tcp", addr)
			}
			if err != nil || e.Count == nil {
				return conn, err
			}
			return e.Count(conn), nil
		},
	}
	switch c := e.Client.(type) {
	case *redis.Client:
		r := c.Options()
		o.InitAddress, o.Username, o.Password, o.SelectDB, o.TLSConfig = []string{r.Addr}, r.Username, r.Password, r.DB, r.TLSConfig
	case *redis.ClusterClient:
		r := c.Options()
		o.InitAddress, o.Username, o.Password, o.TLSConfig = r.Addrs, r.Username, r.Password, r.TLSConfig
	default:
		return o, fmt.Errorf("bench: rueidislock: no address for a %T", e.Client)
	}
	return o, nil
}

// Lock waits as long as ctx allows, but the lock it takes lives until
// Unlock: rueidislock ties a lock's lifetime to the context it waited with,
// and when that ends its monitor deletes the key in the background. With
// ctx itself, the end of a run would free every held lock while its worker
// still counts as holding it, and a waiter racing in would be counted as a
// second holder.
func (l rueidisLocker) Lock(ctx context.Context, name string) (Held, error) {
	wait, stop := context.WithCancel(context.WithoutCancel(ctx))
	stopWaiting := context.AfterFunc(ctx, stop)
	held, release, err := l.l.WithContext(wait, name)
	if !stopWaiting() {
		// ctx ended while waiting: no lock, or one already being freed.
		if err == nil {
			release()
		}
		stop()
		return nil, ctx.Err()
	}
	if err != nil {
		stop()
		return nil, err
	}
	return rueidisHeld{held: held, release: func() { release(); stop() }}, nil
}

func (l rueidisLocker) Close() error { l.l.Close(); return nil }

// rueidisHeld is a lock whose context, held, ends only when the lock is
// lost or released.
type rueidisHeld struct {
	held    context.Context
	release func()
}

func (h rueidisHeld) Unlock(context.Context) error {
	lost := h.held.Err() != nil
	h.release() // returns once the key is deleted
	if lost {
		return errNotHeld
	}
	return nil
}
