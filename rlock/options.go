package rlock

import (
	"fmt"
	"log/slog"
	"time"
)

// DefaultWatchdogLease is the lease of locks taken without WithLease. The
// watchdog renews it every third of its length while the lock is held.
const DefaultWatchdogLease = 30 * time.Second

// DefaultRenewBatchSize is how many renewals go into one pipeline.
const DefaultRenewBatchSize = 1000

// MinLease is the shortest lease accepted, for WithLease and
// WithWatchdogLease: a shorter one would leave the holder almost no time
// between the drift margin and the round trip that took the lock.
const MinLease = 10 * time.Millisecond

// driftMargin is how much sooner than Redis a holder gives up its lease:
// 1% of the lease for the two clocks running at different rates, plus 2ms
// for Redis's millisecond resolution. A hold is valid until the send of its
// last confirmed acquire or renewal, plus the lease, minus this margin.
func driftMargin(lease time.Duration) time.Duration { return lease/100 + 2*time.Millisecond }

// Option configures a Client.
type Option func(*config)

type config struct {
	prefix         string
	watchdogLease  time.Duration
	renewBatchSize int
	classicPubSub  bool
	livenessKeys   bool
	aliveTTL       time.Duration
	onLost         func(name string, cause error)
	logger         *slog.Logger
	slowWait       time.Duration
	observer       Observer
	wire           bool   // WithRedissonWire
	wireClientID   string // WithRedissonWire's; empty: a random UUID
	acks           ackConfig
}

func defaultConfig() config {
	return config{watchdogLease: DefaultWatchdogLease, renewBatchSize: DefaultRenewBatchSize, slowWait: DefaultSlowWait}
}

// newConfig is the configuration opts make, or the first error found in
// it.
func newConfig(opts []Option) (config, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	return cfg, cfg.validate()
}

func (c config) validate() error {
	if c.watchdogLease < MinLease {
		return fmt.Errorf("%w: WithWatchdogLease(%v) is below MinLease (%v)", ErrInvalidLease, c.watchdogLease, MinLease)
	}
	if c.aliveTTL != 0 && c.aliveTTL < minAliveTTL {
		return fmt.Errorf("%w: WithLivenessTTL(%v) is below %v", ErrInvalidOption, c.aliveTTL, minAliveTTL)
	}
	if c.renewBatchSize < 1 {
		return fmt.Errorf("%w: WithRenewBatchSize(%d) must be positive", ErrInvalidOption, c.renewBatchSize)
	}
	return c.acks.validate()
}

// WithKeyPrefix sets the prefix of every key and channel (default "baton:").
// Clients that must see each other's locks need the same prefix. With
// WithRedissonWire there is no default: the prefix, if given, goes before
// the lock's name as a Java NameMapper adding it would.
func WithKeyPrefix(prefix string) Option { return func(c *config) { c.prefix = prefix } }

// WithWatchdogLease sets the lease of locks taken without WithLease (default
// 30s, at least MinLease). The watchdog renews it every lease/3; a holder
// that cannot reach Redis learns of the loss when the lease, less the drift
// margin, has run out since the last renewal it sent.
func WithWatchdogLease(d time.Duration) Option { return func(c *config) { c.watchdogLease = d } }

// WithRenewBatchSize caps how many lease renewals share one pipeline round
// trip (default 1000).
func WithRenewBatchSize(n int) Option { return func(c *config) { c.renewBatchSize = n } }

// WithClassicPubSub makes a cluster client use PUBLISH/SUBSCRIBE instead of
// sharded pub/sub, for managed services that lack SPUBLISH. Non-cluster
// clients always use classic pub/sub, and so does a cluster client over
// Sentinel (redis.NewFailoverClusterClient) or with WithLivenessKeys.
func WithClassicPubSub() Option { return func(c *config) { c.classicPubSub = true } }

// WithLivenessKeys makes the client judge whether a waiter is alive by its
// liveness key (see WithLivenessTTL) instead of by how many connections
// received its grant. Use it when rdb reaches Redis in a way New cannot
// see, where a waiter's pub/sub connection may be on a replica or on a
// demoted master while the release runs on the master: a client wrapped or
// built by hand around Sentinel (a custom Dialer that asks the sentinels),
// or a proxy that may route connections to replicas. Replicas get the
// master's messages by replication without being counted, so a count there
// can call a live waiter dead and grant the lock to two. New sees
// redis.NewFailoverClient, redis.NewUniversalClient with MasterName and
// redis.NewFailoverClusterClient itself. On a cluster the option implies
// WithClassicPubSub. Every client of a lock must use the same setting.
func WithLivenessKeys() Option { return func(c *config) { c.livenessKeys = true } }

// WithLivenessTTL sets how long a waiter counts as alive after its last
// look where the receiver count of a grant cannot tell (classic pub/sub on
// a cluster, Sentinel clients, and WithLivenessKeys): default 3s, at least 30ms. There each
// waiter looks every third of it, which keeps its client's liveness key
// for the lock, and a release skips a waiter whose key has expired. So a
// waiter whose process crashed is skipped by releases made this long after
// its last look, and one granted before that holds the lock for at most
// this long: a grant's lease is this TTL until the waiter's client confirms
// it with a renewal, in the background. Elsewhere the option has no
// effect: the receiver count is exact, and a crashed waiter is skipped at
// once.
func WithLivenessTTL(d time.Duration) Option { return func(c *config) { c.aliveTTL = d } }

// minAliveTTL keeps the looks of WithLivenessTTL at least 10ms apart.
const minAliveTTL = 30 * time.Millisecond

// WithLostHandler is a shortcut for an Observer with only Lost set, kept
// for its simpler signature: it registers fn to be called, once per hold, when a held
// lock is lost (see ErrLockLost), right after the hold's contexts have
// ended. It runs synchronously on whichever goroutine found the loss (the
// watchdog's, a timer's, or one calling Context().Err() or Unlock) and must
// not block.
func WithLostHandler(fn func(name string, cause error)) Option {
	return func(c *config) { c.onLost = fn }
}

// WithLogger makes the client log lost locks (at Warn), and waits longer
// than WithSlowWait (at Debug), to logger. By default it logs nothing.
func WithLogger(logger *slog.Logger) Option { return func(c *config) { c.logger = logger } }

// LockOption configures one Lock or TryLock call.
type LockOption func(*lockConfig)

type lockConfig struct {
	lease     time.Duration // 0: watchdog
	leaseSet  bool
	wait      time.Duration
	waitIsSet bool
}

// WithLease takes the lock with a fixed lease of d (at least MinLease) and
// no watchdog: Redis frees it after d unless it is unlocked sooner, and
// Lock.Context() has a deadline d, less the drift margin, after the send of
// the call that took it. A fixed handle nested in a longer hold (a watchdog
// one, say) leaves that hold alone: only its own Context ends.
func WithLease(d time.Duration) LockOption {
	return func(c *lockConfig) { c.lease, c.leaseSet = d, true }
}

// WaitAtMost bounds how long the call waits for a held lock before it
// returns ErrNotObtained. It turns TryLock into a bounded wait.
func WaitAtMost(d time.Duration) LockOption {
	return func(c *lockConfig) { c.wait, c.waitIsSet = d, true }
}

func newLockConfig(opts []LockOption) (lockConfig, error) {
	var lc lockConfig
	if len(opts) > 0 {
		lc = applyLockOptions(opts)
	}
	if lc.leaseSet && lc.lease < MinLease {
		return lc, fmt.Errorf("%w: WithLease(%v) is below MinLease (%v)", ErrInvalidLease, lc.lease, MinLease)
	}
	if lc.wait < 0 {
		return lc, fmt.Errorf("%w: WaitAtMost(%v) must not be negative", ErrInvalidOption, lc.wait)
	}
	return lc, nil
}

// applyLockOptions is apart from newLockConfig so that a call with no
// options allocates no config: the options get a pointer to it.
func applyLockOptions(opts []LockOption) lockConfig {
	lc := new(lockConfig)
	for _, o := range opts {
		o(lc)
	}
	return *lc
}
