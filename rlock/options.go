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

// Option configures a Client.
type Option func(*config)

type config struct {
	prefix         string
	watchdogLease  time.Duration
	renewBatchSize int
	classicPubSub  bool
	onLost         func(name string, cause error)
	logger         *slog.Logger
}

func defaultConfig() config {
	return config{watchdogLease: DefaultWatchdogLease, renewBatchSize: DefaultRenewBatchSize}
}

func (c config) validate() error {
	if c.watchdogLease < time.Millisecond {
		return fmt.Errorf("%w: WithWatchdogLease(%v)", ErrInvalidLease, c.watchdogLease)
	}
	if c.renewBatchSize < 1 {
		return fmt.Errorf("%w: WithRenewBatchSize(%d) must be positive", ErrInvalidOption, c.renewBatchSize)
	}
	return nil
}

// WithKeyPrefix sets the prefix of every key and channel (default "baton:").
// Clients that must see each other's locks need the same prefix.
func WithKeyPrefix(prefix string) Option { return func(c *config) { c.prefix = prefix } }

// WithWatchdogLease sets the lease of locks taken without WithLease (default
// 30s). The watchdog renews it every lease/3; a holder that cannot reach
// Redis learns of the loss when the lease runs out.
func WithWatchdogLease(d time.Duration) Option { return func(c *config) { c.watchdogLease = d } }

// WithRenewBatchSize caps how many lease renewals share one pipeline round
// trip (default 1000).
func WithRenewBatchSize(n int) Option { return func(c *config) { c.renewBatchSize = n } }

// WithClassicPubSub makes a cluster client use PUBLISH/SUBSCRIBE instead of
// sharded pub/sub, for managed services that lack SPUBLISH. Non-cluster
// clients always use classic pub/sub.
func WithClassicPubSub() Option { return func(c *config) { c.classicPubSub = true } }

// WithLostHandler registers fn to be called, once per hold, when the
// watchdog finds a held lock lost, just before the hold's contexts are
// cancelled. It runs on the watchdog's goroutine and must not block.
func WithLostHandler(fn func(name string, cause error)) Option {
	return func(c *config) { c.onLost = fn }
}

// WithLogger makes the client log lost locks (at Warn) to logger. By default
// it logs nothing.
func WithLogger(logger *slog.Logger) Option { return func(c *config) { c.logger = logger } }

// LockOption configures one Lock or TryLock call.
type LockOption func(*lockConfig)

type lockConfig struct {
	lease     time.Duration // 0: watchdog
	leaseSet  bool
	wait      time.Duration
	waitIsSet bool
}

// WithLease takes the lock with a fixed lease and no watchdog: it is freed
// after d unless unlocked sooner, and Lock.Context() ends at that deadline.
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
	for _, o := range opts {
		o(&lc)
	}
	if lc.leaseSet && lc.lease < time.Millisecond {
		return lc, fmt.Errorf("%w: WithLease(%v)", ErrInvalidLease, lc.lease)
	}
	if lc.wait < 0 {
		return lc, fmt.Errorf("%w: WaitAtMost(%v) must not be negative", ErrInvalidOption, lc.wait)
	}
	return lc, nil
}
