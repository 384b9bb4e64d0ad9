package rlock

import (
	"context"
	"errors"
	"time"

	"github.com/batonlock/baton/watchdog"
)

// Observer receives a Client's lock events, for metrics, logs and traces.
// Every field is optional. The functions are called synchronously, on the
// goroutine where the event happens, and must not block. An Observer with
// no fields set, like none at all, costs nothing.
type Observer struct {
	// WaitStarted: a Lock or TryLock call found the lock held and waits.
	WaitStarted func(WaitStart)
	// WaitEnded: that wait ended, acquired or not.
	WaitEnded func(WaitEnd)
	// Acquired: a Lock or TryLock call returned a lock.
	Acquired func(Acquire)
	// Released: an Unlock was confirmed by Redis.
	Released func(ReleaseInfo)
	// Renewed: the watchdog finished a renewal round.
	Renewed func(RenewalRound)
	// Lost: a hold was lost; called once per hold, with the cause, right
	// after its contexts ended.
	Lost func(Loss)
}

// WaitStart describes a wait that begins.
type WaitStart struct {
	Name string
}

// WaitOutcome says how a wait ended.
type WaitOutcome int

const (
	// WaitAcquired: the lock was taken.
	WaitAcquired WaitOutcome = iota
	// WaitTimedOut: WaitAtMost ran out.
	WaitTimedOut
	// WaitCancelled: the caller's ctx ended.
	WaitCancelled
	// WaitFailed: a Redis error, or the Client closed.
	WaitFailed
)

// String names the outcome.
func (o WaitOutcome) String() string {
	switch o {
	case WaitAcquired:
		return "acquired"
	case WaitTimedOut:
		return "timed out"
	case WaitCancelled:
		return "cancelled"
	}
	return "failed"
}

// WaitEnd describes a wait that ended.
type WaitEnd struct {
	Name     string
	Duration time.Duration
	Outcome  WaitOutcome
	Err      error // nil when acquired
}

// AcquireKind says how a lock was taken.
type AcquireKind int

const (
	// Free: the lock was free and this call took it.
	Free AcquireKind = iota
	// Reentered: the owner held it already; the hold count rose.
	Reentered
	// HandedOff: a release handed it to this waiting call.
	HandedOff
)

// String names the kind.
func (k AcquireKind) String() string {
	switch k {
	case Free:
		return "free"
	case Reentered:
		return "reentered"
	}
	return "handed off"
}

// Acquire describes a lock a Lock or TryLock call returned.
type Acquire struct {
	Name  string
	Kind  AcquireKind
	Token uint64
}

// ReleaseInfo describes a confirmed Unlock.
type ReleaseInfo struct {
	Name  string
	Token uint64
	// Remaining is the owner's hold count left in Redis: 0 when this
	// Unlock freed the lock.
	Remaining int64
}

// RenewalRound describes one round of the watchdog: the leases it sent
// renewals for, in one pipeline per batch.
type RenewalRound struct {
	Leases   int           // renewals sent
	Failed   int           // answered with a transient error, or not sent in time
	Lost     int           // answered: not held
	Duration time.Duration // from the first send to the last answer
}

// Loss describes a lost hold.
type Loss struct {
	Name  string
	Cause error // matches ErrLockLost
}

// WithObserver sends the Client's lock events to o. See Observer.
func WithObserver(o Observer) Option { return func(c *config) { c.observer = o } }

// DefaultSlowWait is the default of WithSlowWait.
const DefaultSlowWait = time.Second

// WithSlowWait sets how long a wait must last before WithLogger's logger
// records it at Debug (default DefaultSlowWait).
func WithSlowWait(d time.Duration) Option { return func(c *config) { c.slowWait = d } }

// observed reports a lock that a Lock or TryLock call returned.
func (c *Client) observed(l *handle, err error) (*Lock, error) {
	if l != nil && c.cfg.observer.Acquired != nil {
		c.cfg.observer.Acquired(Acquire{Name: l.hold.res.name(), Kind: l.kind, Token: l.hold.token})
	}
	return (*Lock)(l), err
}

// observeWait runs wait, reporting its start and end to the observer and a
// slow one to the logger.
func (a *attempt) observeWait(wait func() (*handle, error)) (*handle, error) {
	cfg := &a.c.cfg
	if cfg.observer.WaitStarted == nil && cfg.observer.WaitEnded == nil && cfg.logger == nil {
		return wait()
	}
	if cfg.observer.WaitStarted != nil {
		cfg.observer.WaitStarted(WaitStart{Name: a.res.name()})
	}
	start := time.Now()
	l, err := wait()
	end := WaitEnd{Name: a.res.name(), Duration: time.Since(start), Outcome: waitOutcome(err), Err: err}
	if cfg.observer.WaitEnded != nil {
		cfg.observer.WaitEnded(end)
	}
	if cfg.logger != nil && end.Duration >= cfg.slowWait {
		cfg.logger.Debug("baton: slow wait", "lock", end.Name, "waited", end.Duration, "outcome", end.Outcome.String())
	}
	return l, err
}

func waitOutcome(err error) WaitOutcome {
	switch {
	case err == nil:
		return WaitAcquired
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return WaitCancelled
	case errors.Is(err, ErrNotObtained):
		return WaitTimedOut
	}
	return WaitFailed
}

// renewalRound reports a watchdog round to the observer.
func (c *Client) renewalRound(r watchdog.Round) {
	c.cfg.observer.Renewed(RenewalRound(r))
}
