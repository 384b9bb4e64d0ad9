package rlock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
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
// shared connection, or one per master on a cluster), one watchdog, and
// the table of the holds it has. A Client is safe for concurrent use;
// create one per process and Close it.
type Client struct {
	rdb redis.UniversalClient
	cfg config
	ns  reentrant.Namespace
	id  string // prefix of every owner ID this client makes

	hub    *notify.Hub
	grants grantLine // the grant subscription of the client's waiters
	wd     *watchdog.Scheduler[*hold]

	closed    atomic.Bool
	closeOnce sync.Once

	mu    sync.Mutex // guards holds; taken before no other lock
	holds map[holdKey]*hold

	cleanups sync.WaitGroup // background clean-ups; Close waits for them

	// afterFirstAttempt, when set by tests, runs between the first failed
	// acquire and the subscribe of the wait loop.
	afterFirstAttempt func()
	// beforeJoin, when set by tests, runs in adopt between finding the
	// hold to join and joining it.
	beforeJoin func()
}

// New returns a Client that takes locks on rdb: a *redis.Client (a single
// node, or Sentinel through redis.NewFailoverClient) or a
// *redis.ClusterClient (a Redis Cluster, or Sentinel through
// redis.NewFailoverClusterClient). With Sentinel, waiters' liveness is
// judged by key (see WithLivenessTTL), and a NewFailoverClusterClient uses
// classic pub/sub, as a NewFailoverClient does. The caller still owns rdb and closes it after
// Client.Close. It returns ErrNilClient for a nil client (typed or not) and
// ErrUnsupportedClient for any other kind, such as a *redis.Ring.
func New(rdb redis.UniversalClient, opts ...Option) (*Client, error) {
	isCluster, err := clientKind(rdb)
	if err != nil {
		return nil, err
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	exact := countsExact(rdb) && !cfg.livenessKeys
	sharded := isCluster && exact && !cfg.classicPubSub
	ns := reentrant.Namespace{
		Prefix:             cfg.prefix,
		Sharded:            sharded,
		ReceiversElsewhere: !exact || (isCluster && !sharded),
		AliveTTL:           cfg.aliveTTL,
		RequestTTL:         requestTTL(rdb),
	}
	if _, err := ns.Keys("probe"); err != nil {
		return nil, lower(err)
	}
	mode := notify.Classic
	if sharded {
		mode = notify.Sharded
	}
	c := &Client{rdb: rdb, cfg: cfg, ns: ns, id: randomHex(8), grants: grantLine{perLock: sharded}, holds: map[holdKey]*hold{}}
	hub, err := notify.New(rdb, notify.Options{Mode: mode, Unclaimed: c.unclaimedGrant})
	if err != nil {
		return nil, lower(err)
	}
	c.hub = hub
	wdc := watchdog.Config[*hold]{
		Lease:     cfg.watchdogLease,
		Margin:    driftMargin(cfg.watchdogLease),
		BatchSize: cfg.renewBatchSize,
		Renew:     c.renew,
		OnRenewed: (*hold).extend,
	}
	if cfg.observer.Renewed != nil {
		wdc.OnRound = c.renewalRound
	}
	c.wd, err = watchdog.New(wdc)
	if err != nil {
		_ = hub.Close()
		return nil, err
	}
	return c, nil
}

// clientKind reports whether rdb is a cluster client, or why it cannot be
// used: a typed nil is as nil as an untyped one.
func clientKind(rdb redis.UniversalClient) (cluster bool, err error) {
	switch c := rdb.(type) {
	case nil:
		return false, ErrNilClient
	case *redis.Client:
		if c == nil {
			return false, ErrNilClient
		}
		return false, nil
	case *redis.ClusterClient:
		if c == nil {
			return false, ErrNilClient
		}
		return true, nil
	case *redis.Ring:
		if c == nil {
			return false, ErrNilClient
		}
	}
	return false, fmt.Errorf("%w: %T", ErrUnsupportedClient, rdb)
}

// countsExact reports whether the receiver count of a grant's PUBLISH (on
// one server) or SPUBLISH (on a cluster shard's master) can tell whether
// the waiter's client is alive: whether every connection that can receive
// the grant is on the server that runs it. It cannot where a waiter's
// subscription may be on a replica or a demoted master, which get the
// master's messages by replication without being counted: a Sentinel
// client, and a ClusterClient whose slots are not Redis Cluster's but a
// map it is given (ClusterSlots; redis.NewFailoverClusterClient's is a
// Sentinel master and its replicas, and may subscribe on a replica).
func countsExact(rdb redis.UniversalClient) bool {
	switch c := rdb.(type) {
	case *redis.Client:
		return !isFailover(c.Options())
	case *redis.ClusterClient:
		return c.Options().ClusterSlots == nil
	}
	return false
}

// failoverAddr is the Addr go-redis gives the options of a Sentinel client
// (redis.NewFailoverClient, or redis.NewUniversalClient with MasterName),
// whose dialer asks the sentinels for the master.
const failoverAddr = "FailoverClient"

// isFailover reports whether o are a Sentinel client's options. go-redis
// marks them only by their Addr; since that marker is not its API, any
// Addr a TCP client could not dial counts too, so that a renamed marker
// makes the client judge liveness by key (slower) rather than by count.
func isFailover(o *redis.Options) bool {
	if o.Addr == failoverAddr {
		return true
	}
	if o.Network == "unix" {
		return false
	}
	_, port, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return true
	}
	_, err = strconv.ParseUint(port, 10, 16)
	return err != nil
}

// renew is the watchdog's batch: one pipeline of renew scripts.
func (c *Client) renew(ctx context.Context, batch []*hold) []error {
	renewals := make([]reentrant.Renewal, len(batch))
	for i, h := range batch {
		renewals[i] = reentrant.Renewal{Keys: h.keys, Owner: h.key.owner, Token: h.token}
	}
	renewed, errs := reentrant.RenewAll(ctx, c.rdb, renewals, c.cfg.watchdogLease)
	for i := range errs {
		if errs[i] == nil && !renewed[i] {
			errs[i] = fmt.Errorf("%w: renew %q", watchdog.ErrNotHeld, batch[i].keys.Name)
		}
	}
	return errs
}

func isNotHeld(err error) bool { return errors.Is(err, watchdog.ErrNotHeld) }

// reportLoss runs the lost handler, the observer and the log for a lost
// lock.
func (c *Client) reportLoss(name string, cause error) {
	if c.cfg.onLost != nil {
		c.cfg.onLost(name, cause)
	}
	if c.cfg.observer.Lost != nil {
		c.cfg.observer.Lost(Loss{Name: name, Cause: cause})
	}
	if c.cfg.logger != nil {
		c.cfg.logger.Warn("baton: lock lost", "lock", name, "cause", cause)
	}
}

// ForceUnlock deletes the lock whoever holds it and wakes its waiters. It
// reports whether the lock was held. The hold it deleted, if this client
// had it, is lost: its Contexts end with ErrLockLost. A hold taken after
// the delete is left alone. Holders elsewhere find out at their next
// renewal or Unlock.
func (c *Client) ForceUnlock(ctx context.Context, name string) (bool, error) {
	if c.closed.Load() {
		return false, ErrClosed
	}
	k, err := c.lockKeys(name)
	if err != nil {
		return false, err
	}
	deleted, err := k.ForceRelease(ctx, c.rdb)
	if err != nil || deleted == 0 {
		return false, err
	}
	for _, h := range c.holdsOf(func(h *hold) bool { return h.key.name == name && h.token <= deleted }) {
		h.lose(lostError(name, "force-unlocked"))
	}
	return true, nil
}

// State is a snapshot of a lock, as Inspect reads it.
type State struct {
	// Holders maps owner ID to hold count; empty when the lock is free.
	Holders map[string]int64
	// TTL is the remaining lease; negative when the lock is free.
	TTL time.Duration
	// LastToken is the last fencing token handed out for this lock.
	LastToken uint64
}

// Inspect reads a lock's holders, hold counts, remaining lease and last
// fencing token, without changing it.
func (c *Client) Inspect(ctx context.Context, name string) (State, error) {
	k, err := c.lockKeys(name)
	if err != nil {
		return State{}, err
	}
	st, err := k.Inspect(ctx, c.rdb)
	return State(st), err
}

// RenewalStats counts what the watchdog has done since New.
type RenewalStats struct {
	Ticks      uint64 // ticks of the renewal schedule (every watchdog lease/3)
	RenewCalls uint64 // renewal pipelines sent
	Renewed    uint64 // leases renewed
	Failed     uint64 // renewals answered with a transient error, or not sent in time
	Lost       uint64 // leases the watchdog found lost
}

// RenewalStats reports what the watchdog has done since New.
func (c *Client) RenewalStats() RenewalStats { return RenewalStats(c.wd.Stats()) }

// Close wakes every waiting Lock call with ErrClosed, stops the watchdog,
// releases the locks this client still holds (best effort, bounded in time)
// and ends their contexts with ErrClosed. It also waits for failed Lock
// calls to finish giving back acquires whose reply was lost (at most a
// second each). It does not close the Redis client. Close is idempotent.
func (c *Client) Close() error {
	var err error
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed.Store(true) // under mu: no hold joins the table after this
		c.mu.Unlock()
		err = lower(c.hub.Close())
		var held []*Lock
		for _, h := range c.holdsOf(func(*hold) bool { return true }) {
			held = append(held, h.close()...)
		}
		err = errors.Join(err, c.wd.Close())
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		for _, l := range held {
			h := l.hold
			_, _ = h.keys.Release(ctx, c.rdb, h.key.owner, h.token, l.unlockReq)
		}
		// closed was set under mu, so no clean-up starts after this Wait
		// begins (see background).
		c.cleanups.Wait()
	})
	return err
}

// holdsOf lists the holds in the table that match selects.
func (c *Client) holdsOf(match func(*hold) bool) []*hold {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*hold
	for _, h := range c.holds {
		if match(h) {
			out = append(out, h)
		}
	}
	return out
}

// forget removes an ended hold from the table.
func (c *Client) forget(h *hold) {
	c.mu.Lock()
	if c.holds[h.key] == h {
		delete(c.holds, h.key)
	}
	c.mu.Unlock()
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
	return k, lower(err)
}

// newOwner makes an owner ID no other call shares: the client's ID and 128
// random bits. Most Lock calls make one, so it is built in place: one
// allocation, the string.
func (c *Client) newOwner() string {
	var random [16]byte
	_, _ = rand.Read(random[:])
	var buf [64]byte // the client's ID is 16 hex digits: the owner fits
	owner := append(append(buf[:0], c.id...), ':')
	return string(hex.AppendEncode(owner, random[:]))
}

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
