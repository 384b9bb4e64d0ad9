package rlock

import (
	"context"
	"errors"
)

// errReleased is the end cause of a hold whose handles have all begun to
// unlock: the last one's release was confirmed, or the lease ran out on
// a hold being given up. It never leaves the hold: each unlocked handle's
// Context ends with context.Canceled, finishHandle answers nil for it, and
// endCause turns it into ErrNotHeld.
var errReleased = errors.New("rlock: released")

// lost is the cause of a loss of the hold: what says how it was found out.
func (h *hold) lost(what string) error { return lostError(h.res.name(), what) }

// cutOff decides that the hold ends now with cause, whatever its handles:
// it is lost (a cause matching ErrLockLost), its client closes
// (ErrClosed), or its validity passed once every handle had begun to
// unlock (errReleased). It closes the hold's handle set with cause, ends
// the hold, and returns the handles it cut off, still held until then.
// If another end came first, it returns none, once that end is complete:
// either way, every handle's Context has ended when it returns, so a
// Context's Err never reports an end whose Done is still open.
func (h *hold) cutOff(cause error) []*handle {
	cut, closed := h.handles.close(cause)
	if !closed {
		<-h.done
		return nil
	}
	h.end(cause, cut)
	return cut
}

// end is the one path by which every hold ends, once its handle set has
// been closed with cause: by cutOff, or by its last handle's leave
// (errReleased). cut are the handles still in the set then. It stops the
// renewal, wakes the re-entries waiting for a turn, ends the Contexts of
// the cut handles, stops the validity timer, takes the hold out of its
// client's table and lets every waiting cutOff return. It runs no user
// code until then, so a cutOff may wait for it. Last, for a loss, it runs
// the lost handler, the observer and the log: once per hold, right after
// its Contexts have ended.
func (h *hold) end(cause error, cut []*handle) {
	h.renewal.stop()
	h.turns.wake()
	handleCause := cause
	if cause == errReleased {
		handleCause = context.Canceled // handles still unlocking: their Unlock was the end
	}
	for _, l := range cut {
		l.cancel(handleCause)
	}
	h.validity.stop()
	h.c.table.remove(h)
	close(h.done)
	if errors.Is(cause, ErrLockLost) {
		h.c.reportLoss(h.res.name(), cause)
	}
}

// endCause is why the hold ended, as a call that needs the hold sees it
// (a hold whose handles have all begun to unlock is not held: ErrNotHeld),
// or nil while the hold lasts.
func (h *hold) endCause() error { return h.handles.endCause() }

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
