package rlock

import (
	"fmt"
	"time"

	"github.com/batonlock/baton/reentrant"
	"github.com/batonlock/baton/watchdog"
)

// errReleasedElsewhere ends the handles of a hold that another handle, or
// another client sharing the owner, released to zero.
var errReleasedElsewhere = fmt.Errorf("%w: released through another handle", ErrNotHeld)

// forceUnlocked is the cause handed to holders in this client when
// ForceUnlock deletes their lock.
var forceUnlocked = fmt.Errorf("%w: force-unlocked", ErrLockLost)

type holdKey struct{ name, owner string }

// hold is this client's share of one owner's hold on one lock: the handles
// it gave out, and the watchdog lease that keeps it alive. A hold starts
// with its first handle and ends when its last handle unlocks, when Redis
// says it is gone, or when it is lost; a new acquisition after that starts
// a new hold.
type hold struct {
	key     holdKey
	lock    reentrant.Lock
	lease   time.Duration   // re-applied on partial release
	watch   *watchdog.Lease // nil for fixed leases
	handles map[*Lock]struct{}
	end     error // why the hold ended; nil while it lasts
}

// join records handle l under its hold, starting the hold (and its watchdog
// lease when watched) if this client has none for the owner. acquiredAt is
// when the acquiring script was sent; freshInRedis says Redis counted this
// acquisition as 0→1, so any hold this client remembers for the owner is
// stale: its lease expired without anyone noticing.
func (c *Client) join(l *Lock, acquiredAt time.Time, freshInRedis, watched bool) error {
	key := holdKey{l.name, l.owner}
	c.mu.Lock()
	if c.closed.Load() {
		c.mu.Unlock()
		return ErrClosed
	}
	if stale := c.holds[key]; stale != nil && freshInRedis {
		c.mu.Unlock()
		c.endHold(stale, fmt.Errorf("%w: lease expired", ErrLockLost))
		c.mu.Lock()
	}
	h := c.holds[key]
	created := h == nil
	if created {
		h = &hold{key: key, lock: l.keys, lease: l.lease, handles: map[*Lock]struct{}{}}
		c.holds[key] = h
	}
	h.handles[l] = struct{}{}
	l.hold = h
	c.mu.Unlock()
	if !created || !watched {
		return nil
	}
	// Watch outside c.mu: the watchdog calls back into lost, which takes it.
	w, err := c.wd.Watch(reentrant.Hold{Lock: l.keys, Owner: l.owner}, acquiredAt, func(cause error) {
		c.lost(h, cause)
	})
	if err != nil {
		return ErrClosed
	}
	c.mu.Lock()
	ended := h.end != nil
	if !ended {
		h.watch = w
	}
	c.mu.Unlock()
	if ended {
		w.Stop()
	}
	return nil
}

// lost is the watchdog's loss signal for h.
func (c *Client) lost(h *hold, cause error) {
	if !c.endHold(h, fmt.Errorf("%w: %w", ErrLockLost, cause)) {
		return
	}
	if c.cfg.onLost != nil {
		c.cfg.onLost(h.key.name, cause)
	}
	if c.cfg.logger != nil {
		c.cfg.logger.Warn("baton: lock lost", "lock", h.key.name, "cause", cause)
	}
}

// leave removes handle l from its hold after a release that left the owner
// holding the lock. The hold ends when it was the last handle here.
func (c *Client) leave(l *Lock) {
	h := l.hold
	c.mu.Lock()
	delete(h.handles, l)
	last := len(h.handles) == 0
	c.mu.Unlock()
	if last {
		c.endHold(h, errReleasedElsewhere)
	}
}

// endHold removes h from the client's table and finishes it.
func (c *Client) endHold(h *hold, cause error) bool {
	c.mu.Lock()
	if c.holds[h.key] == h {
		delete(c.holds, h.key)
	}
	c.mu.Unlock()
	return c.finish(h, cause)
}

// endHolds ends every hold that match selects, with cause, and returns them.
func (c *Client) endHolds(match func(*hold) bool, cause error) []*hold {
	c.mu.Lock()
	var ended []*hold
	for k, h := range c.holds {
		if match(h) {
			delete(c.holds, k)
			ended = append(ended, h)
		}
	}
	c.mu.Unlock()
	for _, h := range ended {
		c.finish(h, cause)
	}
	return ended
}

// finish ends h with cause: it stops the watchdog lease synchronously, so no
// renewal is sent once it returns, and cancels every handle's Context. It
// reports false when h had already ended.
func (c *Client) finish(h *hold, cause error) bool {
	c.mu.Lock()
	if h.end != nil {
		c.mu.Unlock()
		return false
	}
	h.end = cause
	w := h.watch
	handles := make([]*Lock, 0, len(h.handles))
	for l := range h.handles {
		handles = append(handles, l)
	}
	c.mu.Unlock()
	if w != nil {
		w.Stop()
	}
	for _, l := range handles {
		l.cancel(cause)
	}
	return true
}

// ended reports why l's hold ended, or nil while it lasts.
func (c *Client) ended(l *Lock) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return l.hold.end
}
