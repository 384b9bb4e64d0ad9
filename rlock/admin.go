package rlock

import (
	"context"
	"time"
)

// ForceUnlock deletes the lock whoever holds it and wakes its waiters. It
// reports how many holds it ended: 1 if the lock was held, else 0. The hold it deleted, if this client
// had it, is lost: its Contexts end with ErrLockLost. A hold taken after
// the delete is left alone. Holders elsewhere find out at their next
// renewal or Unlock.
func (c *Client) ForceUnlock(ctx context.Context, name string) (int64, error) {
	if err := c.checkOpen(); err != nil {
		return 0, err
	}
	switch {
	case c.wire != nil:
		return c.forceUnlockWire(ctx, name)
	case c.quorum != nil:
		return c.forceUnlockQuorum(ctx, name)
	}
	p, err := c.plainLock(name)
	if err != nil {
		return 0, err
	}
	deleted, err := p.keys.ForceRelease(ctx, c.rdb, newRequestID())
	if err != nil || deleted == 0 {
		return 0, err
	}
	c.forceReleased(p.id(), deleted)
	return 1, nil
}

// forceReleased makes lost this client's hold of lock id, if it has one
// of ID at most deleted, the ID of the hold a force-release deleted: a
// later hold is not among those deleted.
func (c *Client) forceReleased(id resourceID, deleted uint64) {
	for _, h := range c.table.holdsOf(func(h *hold) bool { return h.res.id() == id && h.id <= deleted }) {
		h.cutOff(h.lost("force-released"))
	}
}

// State is a snapshot of a lock, as Inspect reads it.
//
// It is rlock's own type rather than reentrant.State, the inspect script's
// result, which it converts from: rlock is the API, and reentrant a
// building block that may change before v1. The conversion compiles only
// while the two have the same fields, so a change below cannot change
// this API unnoticed.
type State struct {
	// Holders maps owner ID to hold count; empty when the lock is free.
	Holders map[string]int64
	// TTL is the remaining lease; negative when the lock is free.
	TTL time.Duration
	// LastToken is the last fencing token handed out for this lock; 0 once
	// Redis has let the counter expire, two leases past the token's time.
	// In quorum mode it is the highest of the nodes' counters: at least
	// the last token handed out, and above it where a node granted a
	// look that made no hold, or joined a hold after its majority, with a
	// higher token of its own.
	LastToken uint64
}

// Inspect reads a lock's holders, hold counts, remaining lease and last
// fencing token, without changing it. With WithRedissonWire, Holders is
// keyed by the hash's fields ("<clientID>:<owner>") and LastToken is 0.
// After Close it returns ErrClosed, as every call that sends does.
func (c *Client) Inspect(ctx context.Context, name string) (State, error) {
	if err := c.checkOpen(); err != nil {
		return State{}, err
	}
	switch {
	case c.wire != nil:
		return c.inspectWire(ctx, name)
	case c.quorum != nil:
		return c.inspectQuorum(ctx, name)
	}
	p, err := c.plainLock(name)
	if err != nil {
		return State{}, err
	}
	st, err := p.keys.Inspect(ctx, c.rdb)
	return State(st), err
}
