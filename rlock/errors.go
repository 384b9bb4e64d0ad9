package rlock

import (
	"errors"
	"fmt"
)

var (
	// ErrNotObtained: the lock is held by another owner and the call's wait
	// (none for TryLock, WaitAtMost otherwise) ran out. When the call's ctx
	// ended the wait, the error also matches ctx.Err().
	ErrNotObtained = errors.New("rlock: lock not obtained")

	// ErrNotHeld: Unlock by an owner that does not hold the lock, because it
	// never did, already unlocked this handle, or its fixed lease expired.
	ErrNotHeld = errors.New("rlock: lock not held")

	// ErrLockLost: the lock was taken away while held: the watchdog could not
	// renew it before its lease ran out, Redis answered that it is no longer
	// held, it was force-unlocked, or a fixed lease expired. It is the cause
	// of the cancelled Lock.Context() and what Unlock returns afterwards.
	ErrLockLost = errors.New("rlock: lock lost")

	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("rlock: client closed")

	// ErrInvalidName: the lock name is empty, contains '{' or '}', or is
	// longer than 1,024 bytes. It also matches reentrant.ErrInvalidName.
	ErrInvalidName = errors.New("rlock: invalid lock name")

	// ErrInvalidOption: an option or argument is out of range.
	ErrInvalidOption = errors.New("rlock: invalid option")

	// ErrInvalidLease: a lease (WithLease, WithWatchdogLease) is not positive
	// or is below the 1ms resolution of Redis. It matches ErrInvalidOption.
	ErrInvalidLease = fmt.Errorf("%w: lease must be at least 1ms", ErrInvalidOption)

	// ErrNilClient: New was given a nil Redis client.
	ErrNilClient = errors.New("rlock: nil redis client")
)
