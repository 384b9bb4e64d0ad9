package rlock

import (
	"math"
	"sync/atomic"
	"time"
)

// clockBase anchors the monotonic instants a validity keeps in an atomic.
var clockBase = time.Now()

// monoOf is t on the monotonic clock, as nanoseconds since clockBase.
func monoOf(t time.Time) int64 { return int64(t.Sub(clockBase)) }

// validUntil is until when an acquire or renewal sent at sent with lease
// keeps a hold valid locally: never later than Redis's own expiry.
func validUntil(sent time.Time, lease time.Duration) time.Time {
	return sent.Add(lease - driftMargin(lease))
}

// validity is a hold's validity clock: the instant until which Redis
// surely still keeps the hold for its owner (the latest send of a
// confirmed acquire or renewal, plus its lease, less the drift margin),
// and the timer that calls the hold at that instant. The instant only
// rises. It is atomic, so a Context's Err reads it without a lock.
type validity struct {
	until atomic.Int64 // a monotonic instant (monoOf)
	timer *time.Timer  // fires at until; set once, by start
	// unacked: replicas did not acknowledge a renewal since the last
	// extension, so that the end can name replication as its cause.
	unacked atomic.Bool
}

// start sets the clock to until, and arms its timer to call atValidity
// then, or at once if until has passed. atValidity reads v.timer (to
// re-arm it): so the timer is made idle, and armed only once v has it.
func (v *validity) start(until time.Time, atValidity func()) {
	v.until.Store(monoOf(until))
	v.timer = time.AfterFunc(math.MaxInt64, atValidity)
	v.timer.Reset(time.Until(until))
}

// extend records a confirmed acquire or renewal valid until deadline.
func (v *validity) extend(deadline time.Time) {
	v.unacked.Store(false)
	d := monoOf(deadline)
	for {
		cur := v.until.Load()
		if d <= cur || v.until.CompareAndSwap(cur, d) {
			return
		}
	}
}

// passed reports whether the validity has passed at now.
func (v *validity) passed(now time.Time) bool { return monoOf(now) >= v.until.Load() }

// stop stops the timer, for a hold that has ended.
func (v *validity) stop() { v.timer.Stop() }

// atValidity is the validity timer's: the hold ends at its validity
// unless a renewal moved it, in which case the timer waits for the new
// one.
func (h *hold) atValidity() {
	if h.endCause() != nil {
		return
	}
	now := time.Now()
	if h.validity.passed(now) {
		h.cutOff(h.causeAtValidity())
		return
	}
	h.validity.timer.Reset(time.Duration(h.validity.until.Load() - monoOf(now)))
}

// causeAtValidity is why the hold ends once its validity has passed: it
// is lost, unless every handle had begun to unlock, in which case the
// lease ran out on a hold being given up, which is no loss.
//
// Whoever finds the validity passed ends the hold with this cause (a
// Context's Err, Unlock, the timer), so that the caller's next look at any
// of its Contexts sees the end: Err is exact after a pause, before any
// timer has had a chance to fire.
func (h *hold) causeAtValidity() error {
	if h.handles.givenUp() {
		return errReleased
	}
	return h.lost(h.leaseRanOut())
}

// leaseRanOut says how the hold's lease ran out: before replicas
// acknowledged a renewal, or before a renewal was confirmed at all.
func (h *hold) leaseRanOut() string {
	if h.validity.unacked.Load() {
		return "its lease ran out before replicas acknowledged a renewal"
	}
	return "its lease ran out before a renewal was confirmed"
}
