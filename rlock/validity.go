package rlock

import (
	"time"
)

// clockBase anchors the monotonic instants a hold keeps in an atomic.
var clockBase = time.Now()

// monoOf is t on the monotonic clock, as nanoseconds since clockBase.
func monoOf(t time.Time) int64 { return int64(t.Sub(clockBase)) }

// validity is how long an acquire or renewal sent at sent with lease keeps
// the hold valid locally: never later than Redis's own expiry.
func validity(sent time.Time, lease time.Duration) time.Time {
	return sent.Add(lease - driftMargin(lease))
}

// extend records a confirmed acquire or renewal valid until deadline.
func (h *hold) extend(deadline time.Time) {
	d := monoOf(deadline)
	for {
		cur := h.validUntil.Load()
		if d <= cur || h.validUntil.CompareAndSwap(cur, d) {
			return
		}
	}
}

// expired reports whether the hold's validity has passed at now, and if so
// ends it as lost, so that the caller's next look at any of its contexts
// sees the end. This is what makes Err exact after a pause, before any
// timer has had a chance to fire.
func (h *hold) expired(now time.Time) bool {
	if monoOf(now) < h.validUntil.Load() {
		return false
	}
	if h.givenUp() {
		// Every handle has called Unlock: the lease ran out on a hold
		// being given up, which is no loss.
		h.endWith(errReleased)
		return true
	}
	h.lose(lostError(h.key.name, "its lease ran out before a renewal was confirmed"))
	return true
}

// checkExpiry is the expiry timer: the hold ends at its validity, unless a
// renewal moved it, in which case the timer waits for the new one.
func (h *hold) checkExpiry() {
	if h.ended() != nil {
		return
	}
	now := time.Now()
	if !h.expired(now) {
		h.expiry.Reset(time.Duration(h.validUntil.Load() - monoOf(now)))
	}
}
