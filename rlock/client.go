package rlock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/notify"
	"github.com/batonlock/baton/reentrant"
	"github.com/batonlock/baton/watchdog"
)

// closeTimeout bounds the best-effort release of held locks in Close.
const closeTimeout = 2 * time.Second

// Client takes locks on one Redis deployment. It owns one pub/sub hub (one
// shared connection, or one per master on a cluster) and one watchdog. A
// Client is safe for concurrent use; create one per process and Close it.
type Client struct {
	rdb redis.UniversalClient
	cfg config
	ns  reentrant.Namespace
	id  string // prefix of every owner ID this client makes

	hub *notify.Hub
	wd  *watchdog.Scheduler[reentrant.Hold]

	closed    atomic.Bool
	closeOnce sync.Once

	mu    sync.Mutex
	holds map[holdKey]*hold

	cleanups sync.WaitGroup // background clean-ups; Close waits for them

	// afterFirstAttempt, when set by tests, runs between the first failed
	// acquire and the subscribe of the wait loop.
	afterFirstAttempt func()
}

// New returns a Client that takes locks on rdb, which may be a *redis.Client,
// a *redis.ClusterClient or any other redis.UniversalClient. The caller still
// owns rdb and closes it after Client.Close.
func New(rdb redis.UniversalClient, opts ...Option) (*Client, error) {
	if rdb == nil {
		return nil, ErrNilClient
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	_, isCluster := rdb.(*redis.ClusterClient)
	sharded := isCluster && !cfg.classicPubSub
	ns := reentrant.Namespace{Prefix: cfg.prefix, Sharded: sharded, RequestTTL: requestTTL(rdb)}
	if _, err := ns.Keys("probe"); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	id := randomHex(8)
	mode := notify.Classic
	if sharded {
		mode = notify.Sharded
	}
	hub, err := notify.New(rdb, notify.Options{Mode: mode})
	if err != nil {
		return nil, err
	}
	c := &Client{rdb: rdb, cfg: cfg, ns: ns, id: id, hub: hub, holds: map[holdKey]*hold{}}
	c.wd, err = watchdog.New(watchdog.Config[reentrant.Hold]{
		Lease:     cfg.watchdogLease,
		BatchSize: cfg.renewBatchSize,
		Renew:     c.renew,
	})
	if err != nil {
		_ = hub.Close()
		return nil, err
	}
	return c, nil
}

// renew is the watchdog's batch: one pipeline of renew scripts.
func (c *Client) renew(ctx context.Context, batch []reentrant.Hold) []error {
	errs := reentrant.RenewAll(ctx, c.rdb, batch, c.cfg.watchdogLease)
	for i, err := range errs {
		if errors.Is(err, reentrant.ErrNotHeld) {
			errs[i] = fmt.Errorf("%w: %w", watchdog.ErrNotHeld, err)
		}
	}
	return errs
}

// ForceUnlock deletes the lock whoever holds it and wakes its waiters. It
// reports whether the lock was held. Holders in this client see their
// Context() cancelled with ErrLockLost; holders elsewhere find out at their
// next renewal or Unlock.
func (c *Client) ForceUnlock(ctx context.Context, name string) (bool, error) {
	if c.closed.Load() {
		return false, ErrClosed
	}
	k, err := c.lockKeys(name)
	if err != nil {
		return false, err
	}
	deleted, err := k.ForceRelease(ctx, c.rdb)
	if err != nil {
		return false, err
	}
	c.endHolds(func(h *hold) bool { return h.key.name == name }, errForceUnlocked)
	return deleted != 0, nil
}

// Inspect reads a lock's holders, hold counts, remaining lease and last
// fencing token, without changing it.
func (c *Client) Inspect(ctx context.Context, name string) (reentrant.State, error) {
	k, err := c.lockKeys(name)
	if err != nil {
		return reentrant.State{}, err
	}
	return k.Inspect(ctx, c.rdb)
}

// RenewalStats reports what the watchdog has done since New: ticks, renew
// calls (one pipeline each), leases renewed, failed and lost.
func (c *Client) RenewalStats() watchdog.Stats { return c.wd.Stats() }

// Close wakes every waiting Lock call with ErrClosed, stops the watchdog,
// releases the locks this client still holds (best effort, bounded in time)
// and cancels their contexts with ErrClosed. It also waits for failed Lock
// calls to finish giving back acquires whose reply was lost (at most a
// second each). It does not close the Redis client. Close is idempotent.
func (c *Client) Close() error {
	var err error
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		err = c.hub.Close()
		ended := c.endHolds(func(*hold) bool { return true }, ErrClosed)
		err = errors.Join(err, c.wd.Close())
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		for _, h := range ended {
			for range h.handles {
				_, _ = h.lock.Release(ctx, c.rdb, h.key.owner, h.token, newRequestID())
			}
		}
		// endHolds took c.mu after closed was set, so no clean-up starts
		// after this Wait begins (see background).
		c.cleanups.Wait()
	})
	return err
}

// background runs f, which must end on its own soon, on a goroutine that
// Close waits for. Once Close has begun, f runs inline instead.
func (c *Client) background(f func()) {
	c.mu.Lock()
	if c.closed.Load() {
		c.mu.Unlock()
		f()
		return
	}
	c.cleanups.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.cleanups.Done()
		f()
	}()
}

func (c *Client) lockKeys(name string) (reentrant.Keys, error) {
	k, err := c.ns.Keys(name)
	if errors.Is(err, reentrant.ErrInvalidName) {
		return k, fmt.Errorf("%w: %w", ErrInvalidName, err)
	}
	return k, err
}

// newOwner makes an owner ID no other call shares: the client's ID and 128
// random bits.
func (c *Client) newOwner() string { return c.id + ":" + randomHex(16) }

// randomHex is n random bytes from crypto/rand, in hex. crypto/rand.Read
// never fails (since Go 1.24 it crashes the program instead).
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// requestTTL is how long a request's result must be remembered: longer than
// the window in which go-redis may resend the call after timeouts.
func requestTTL(rdb redis.UniversalClient) time.Duration {
	var retries int
	var read, write, backoff time.Duration
	switch c := rdb.(type) {
	case *redis.Client:
		o := c.Options()
		retries, read, write, backoff = o.MaxRetries, o.ReadTimeout, o.WriteTimeout, o.MaxRetryBackoff
	case *redis.ClusterClient:
		o := c.Options()
		retries, read, write, backoff = o.MaxRedirects+o.MaxRetries, o.ReadTimeout, o.WriteTimeout, o.MaxRetryBackoff
	default:
		return reentrant.DefaultRequestTTL
	}
	perTry := max(read, 0) + max(write, 0) + max(backoff, 0)
	if perTry == 0 {
		perTry = 5 * time.Second // timeouts disabled: assume a generous network stall
	}
	return time.Duration(max(retries, 0))*perTry + time.Second
}
