package rlock

import (
	"fmt"
	"time"

	"github.com/batonlock/baton/reentrant"
	"github.com/batonlock/baton/watchdog"
)

var (
	// errReleasedElsewhere ends the handles of a hold that another handle,
	// or another client sharing the owner, released to zero.
	errReleasedElsewhere = fmt.Errorf("%w: released through another handle", ErrNotHeld)
	// errExpiredUnnoticed ends a hold whose lease ran out while nobody was
	// watching it (a fixed lease): Redis has since started a new hold.
	errExpiredUnnoticed = fmt.Errorf("%w: lease expired", ErrLockLost)
	// errForceUnlocked ends holds in this client that ForceUnlock deleted.
	errForceUnlocked = fmt.Errorf("%w: force-unlocked", ErrLockLost)
)

type holdKey struct{ name, owner string }

// hold is this client's share of one owner's hold on one lock: the handles
// it gave out, and the watchdog lease that keeps it alive. A hold starts
// with its first handle and ends when its last handle unlocks, when Redis
// says it is gone, or when it is lost. Holds are told apart by fencing
// token: every new hold in Redis gets a higher one.
type hold struct {
	key     holdKey
	token   uint64
	lock    reentrant.Keys
	lease   time.Duration   // re-applied on partial release
	watch   *watchdog.Lease // nil for fixed leases
	handles map[*Lock]struct{}
	end     error // why the hold ended; nil while it lasts
}

// ending is what must happen, outside c.mu, once a hold has ended.
type ending struct {
	watch   *watchdog.Lease
	handles []*Lock
	cause   error
}

// run stops the watchdog lease synchronously, so no renewal is sent once it
// returns, and cancels every handle's Context.
func (e ending) run() {
	if e.watch != nil {
		e.watch.Stop()
	}
	for _, l := range e.handles {
		l.cancel(e.cause)
	}
}

// endLocked marks h ended with cause and removes it from the table. It
// reports false if h had already ended. c.mu must be held.
func (c *Client) endLocked(h *hold, cause error) (ending, bool) {
	if c.holds[h.key] == h {
		delete(c.holds, h.key)
	}
	if h.end != nil {
		return ending{}, false
	}
	h.end = cause
	e := ending{watch: h.watch, cause: cause}
	for l := range h.handles {
		e.handles = append(e.handles, l)
	}
	return e, true
}

// endHold ends h with cause and reports whether this call ended it.
func (c *Client) endHold(h *hold, cause error) bool {
	c.mu.Lock()
	e, ok := c.endLocked(h, cause)
	c.mu.Unlock()
	e.run()
	return ok
}

// join records handle l under its hold, starting the hold (and its watchdog
// lease when watched) if this client has none for the owner. acquiredAt is
// when the acquiring script was sent.
func (c *Client) join(l *Lock, acquiredAt time.Time, watched bool) error {
	key := holdKey{l.keys.Name, l.owner}
	c.mu.Lock()
	if c.closed.Load() {
		c.mu.Unlock()
		return ErrClosed
	}
	var stale ending
	h := c.holds[key]
	if h != nil && h.token < l.token {
		stale, _ = c.endLocked(h, errExpiredUnnoticed)
		h = nil
	}
	created := h == nil
	if created {
		h = &hold{key: key, token: l.token, lock: l.keys, lease: l.lease, handles: map[*Lock]struct{}{}}
		c.holds[key] = h
	}
	if h.token > l.token {
		// l re-entered a hold that has expired and been replaced since;
		// it gets a hold of its own that has already ended.
		h = &hold{key: key, token: l.token, end: errExpiredUnnoticed, handles: map[*Lock]struct{}{}}
		l.cancel(errExpiredUnnoticed)
	}
	h.handles[l] = struct{}{}
	l.hold = h
	c.mu.Unlock()
	stale.run()
	if !created || !watched {
		return nil
	}
	// Watch outside c.mu: the watchdog calls back into lost, which takes it.
	w, err := c.wd.Watch(reentrant.Hold{Keys: l.keys, Owner: l.owner, Token: l.token}, acquiredAt, func(cause error) {
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

// lost is the watchdog's loss signal for h. The handler and the log run
// before the handles' contexts are cancelled, so a holder that sees its
// context end can rely on them having run.
func (c *Client) lost(h *hold, cause error) {
	c.mu.Lock()
	e, ok := c.endLocked(h, fmt.Errorf("%w: %w", ErrLockLost, cause))
	c.mu.Unlock()
	if !ok {
		return
	}
	if c.cfg.onLost != nil {
		c.cfg.onLost(h.key.name, cause)
	}
	if c.cfg.logger != nil {
		c.cfg.logger.Warn("baton: lock lost", "lock", h.key.name, "cause", cause)
	}
	e.run()
}

// leave removes handle l from its hold after a release that left the owner
// holding the lock. The hold ends when it was the last handle here.
func (c *Client) leave(l *Lock) {
	c.mu.Lock()
	h := l.hold
	delete(h.handles, l)
	var e ending
	if len(h.handles) == 0 {
		e, _ = c.endLocked(h, errReleasedElsewhere)
	}
	c.mu.Unlock()
	e.run()
}

// endHolds ends every hold that match selects, with cause, and returns them.
func (c *Client) endHolds(match func(*hold) bool, cause error) []*hold {
	c.mu.Lock()
	var ended []*hold
	var endings []ending
	for _, h := range c.holds {
		if match(h) {
			e, _ := c.endLocked(h, cause)
			ended, endings = append(ended, h), append(endings, e)
		}
	}
	c.mu.Unlock()
	for _, e := range endings {
		e.run()
	}
	return ended
}

// ended reports why l's hold ended, or nil while it lasts.
func (c *Client) ended(l *Lock) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return l.hold.end
}
