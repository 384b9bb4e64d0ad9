package rlock

import (
	"context"
	"time"
)

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
