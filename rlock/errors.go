package rlock

import (
	"errors"
	"fmt"

	"github.com/batonlock/baton/notify"
	"github.com/batonlock/baton/reentrant"
	"github.com/batonlock/baton/watchdog"
)

var (
	// ErrNotObtained: the lock is held by another owner and the call's wait
	// (none for TryLock, WaitAtMost otherwise) ran out. When the call's ctx
	// ended the wait, the error also matches ctx.Err().
	ErrNotObtained = errors.New("rlock: lock not obtained")

	// ErrNotHeld: Unlock of a handle that was already unlocked, or that
	// never held the lock; with ErrNotObtained, a re-entry through a handle
	// whose hold has been given up. A lock taken away while the handle held
	// it is ErrLockLost instead.
	ErrNotHeld = errors.New("rlock: lock not held")

	// ErrLockLost: the lock was taken away while this handle held it: its
	// lease ran out before a renewal was confirmed, Redis answered that it
	// is no longer held (expired, deleted, force-released, server
	// restarted), or ForceUnlock deleted it. It is the cause of the ended
	// Lock.Context() and what Unlock returns afterwards.
	ErrLockLost = errors.New("rlock: lock lost")

	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("rlock: client closed")

	// ErrInvalidName: the lock name is empty, contains '{' or '}', or is
	// longer than 1,024 bytes.
	ErrInvalidName = errors.New("rlock: invalid lock name")

	// ErrInvalidOption: an option or argument is out of range.
	ErrInvalidOption = errors.New("rlock: invalid option")

	// ErrLockOrder: LockAll (or TryLockAll with WaitAtMost) through a ctx
	// that holds a name of the set after, in the canonical order, a name it
	// does not hold. The set would wait for the earlier name holding the
	// later one, against the order every set keeps, and could deadlock with
	// a set that holds the earlier name and waits for the later. Nothing
	// was sent.
	ErrLockOrder = errors.New("rlock: lock set against the canonical order")

	// ErrInvalidLease: a lease (WithLease, WithWatchdogLease) is shorter
	// than MinLease. It matches ErrInvalidOption.
	ErrInvalidLease = fmt.Errorf("%w: lease too short", ErrInvalidOption)

	// ErrNilClient: New was given a nil Redis client, typed or not.
	ErrNilClient = errors.New("rlock: nil redis client")

	// ErrNotReplicated: too few replicas acknowledged, within the timeout
	// of WithReplicaAcks (or its default), the write that made or extended
	// a hold. A Lock that fails with it also matches ErrNotObtained: the
	// grant was given back. A hold whose renewals go unacknowledged until
	// its lease runs out ends with ErrLockLost, naming replication.
	ErrNotReplicated = errors.New("rlock: not acknowledged by replicas")

	// ErrReplicaAcksUnsupported: New was given WithReplicaAcks(n > 0, …)
	// for a server that refuses WAIT (an unknown command, or an ACL
	// without +wait).
	ErrReplicaAcksUnsupported = errors.New("rlock: server refuses WAIT, which replica acknowledgements need")

	// ErrTokenOverflow: the lock's fencing counter on a server is at the
	// end of the exact range of tokens (reentrant.MaxToken, 2^53-1 µs, in
	// the year 2255), so no later hold can be made there. Lock and TryLock
	// fail with it and take nothing; an Unlock, a waiter's leave or a
	// ForceUnlock that would hand the lock to a waiter fails with it too,
	// and the hold ends with its lease. It stays so until the counter is
	// reset by hand. In quorum mode that node counts as failed, and a
	// majority of the others still grants. It is reentrant's own sentinel,
	// so every error of a refusing script matches it, whichever call
	// returns it.
	ErrTokenOverflow = reentrant.ErrTokenOverflow

	// ErrUnsupportedClient: New was given a client other than a
	// *redis.Client (a single node, or Sentinel through
	// redis.NewFailoverClient) or a *redis.ClusterClient. A *redis.Ring, for
	// one, spreads keys over independent servers, which no lock can span.
	ErrUnsupportedClient = errors.New("rlock: unsupported redis client")
)

// lockError is an error about one lock: it names the lock once, says what
// happened, and matches its sentinel and its cause with errors.Is.
type lockError struct {
	sentinel error
	name     string
	what     string // "lost: renewal found it not held"
	cause    error  // nil, or the underlying error
}

func (e *lockError) Error() string {
	msg := fmt.Sprintf("rlock: lock %q %s", e.name, e.what)
	if e.cause != nil {
		msg += ": " + e.cause.Error()
	}
	return msg
}

func (e *lockError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.sentinel}
	}
	return []error{e.sentinel, e.cause}
}

// lostError is a loss of lock name: what says how it was found out.
func lostError(name, what string) error {
	return &lockError{sentinel: ErrLockLost, name: name, what: "lost: " + what}
}

// lower maps the sentinels of the packages below rlock to rlock's own,
// keeping the detail of the lower error; every such mapping is here. An
// error lower has mapped already passes unchanged, so a caller may lower
// what may have been lowered before.
func lower(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrInvalidName), errors.Is(err, ErrInvalidOption):
		return err // lowered already: it wraps its lower sentinel
	case errors.Is(err, reentrant.ErrInvalidName):
		return fmt.Errorf("%w: %w", ErrInvalidName, err)
	case errors.Is(err, reentrant.ErrInvalidPrefix):
		return fmt.Errorf("%w: %w", ErrInvalidOption, err)
	case errors.Is(err, reentrant.ErrInvalidLease):
		return fmt.Errorf("%w: %w", ErrInvalidLease, err)
	case errors.Is(err, reentrant.ErrInvalidPermits), errors.Is(err, reentrant.ErrInvalidSize):
		// A semaphore's permits or size out of range: an argument's.
		return fmt.Errorf("%w: %w", ErrInvalidOption, err)
	case errors.Is(err, notify.ErrClosed), errors.Is(err, watchdog.ErrClosed):
		return ErrClosed
	case errors.Is(err, notify.ErrUnsupportedClient):
		return fmt.Errorf("%w: %w", ErrUnsupportedClient, err)
	case errors.Is(err, notify.ErrNilClient):
		return ErrNilClient
	}
	return err
}
