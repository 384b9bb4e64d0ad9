package rlock

import (
	"context"
	"errors"
)

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

// errReleased ends a hold whose handles have all unlocked. It never leaves
// the hold: each unlocked handle's Context ends with context.Canceled,
// finish answers nil for it, and endLocked turns it into ErrNotHeld.
var errReleased = errors.New("rlock: released")

// lose ends the hold because the lock was taken away. The lost handler and
// the log run once per hold, right after its contexts have ended.
func (h *hold) lose(cause error) {
	if h.endWith(cause) {
		h.c.reportLoss(h.key.name, cause)
	}
}

// close ends the hold because its client is closing, and returns the
// handles still held, for Close to release.
func (h *hold) close() []*Lock {
	h.mu.Lock()
	held := h.handles.all()
	h.mu.Unlock()
	if !h.endWith(ErrClosed) {
		return nil // ended by a loss or its last Unlock meanwhile
	}
	return held
}

// endWith ends the hold with cause, unless it has already ended, and
// reports whether this call ended it. Either way, every handle's Context
// has ended when it returns: a Context's Err never reports an end whose
// Done is still open. It runs no user code, so it may wait for another
// goroutine's end to complete.
func (h *hold) endWith(cause error) bool {
	h.mu.Lock()
	if h.end != nil {
		h.mu.Unlock()
		<-h.retired
		return false
	}
	h.end = cause
	stop := h.lease
	h.lease = nil
	handles := h.handles.all()
	h.passTurnLocked()
	h.mu.Unlock()
	if stop != nil {
		stop.Stop()
	}
	handleCause := cause
	if cause == errReleased {
		handleCause = context.Canceled // handles still unlocking: their Unlock was the end
	}
	for _, l := range handles {
		l.cancel(handleCause)
	}
	h.retire()
	return true
}

// retire completes the end of a hold: it stops its timer, removes it from
// its client's table, and lets every other caller of endWith return.
func (h *hold) retire() {
	h.expiry.Stop()
	h.c.forget(h)
	close(h.retired)
}

// ended reports why the hold ended, as endLocked does, or nil while it
// lasts.
func (h *hold) ended() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.endLocked()
}

// endLocked is why the hold ended, as a call that needs the hold sees it:
// a hold whose handles have all begun to unlock is not held (ErrNotHeld).
// It is nil while the hold lasts. h.mu is held.
func (h *hold) endLocked() error {
	if h.end == errReleased {
		return ErrNotHeld
	}
	return h.end
}
