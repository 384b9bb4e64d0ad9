package rlock

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonlock/baton/reentrant"
	"github.com/batonlock/baton/watchdog"
)

// clockBase anchors the monotonic instants a hold keeps in an atomic.
var clockBase = time.Now()

// monoOf is t on the monotonic clock, as nanoseconds since clockBase.
func monoOf(t time.Time) int64 { return int64(t.Sub(clockBase)) }

type holdKey struct{ name, owner string }

// hold is one owner's hold on one lock, within one Client: the only owner
// of its validity, its watchdog lease, its handles and the cause of its
// end. Every handle (Lock) of the hold is a thin view of it. A hold starts
// with the acquire that took or first re-entered the lock here, and ends
// once, when its last handle has unlocked or when it is lost or closed.
// Holds are told apart by fencing token: every new hold in Redis gets a
// higher one, and the scripts act on a hold only under its token.
type hold struct {
	c     *Client
	key   holdKey
	keys  reentrant.Keys
	token uint64

	// validUntil is the monotonic instant (see monoOf) until which Redis
	// surely still holds the lock for this owner: the latest send of a
	// confirmed acquire or renewal, plus its lease, less the drift margin.
	// It only rises. Atomic, so a Context's Err can read it without mu.
	validUntil atomic.Int64
	expiry     *time.Timer // fires at validUntil, and re-arms if it rose

	retired chan struct{} // closed once the end is complete: every Context ended

	mu       sync.Mutex      // guards the fields below
	handles  handleList      // handles not yet finished
	live     int             // handles that have not begun to unlock
	watched  int             // live handles taken without WithLease
	lease    *watchdog.Lease // the renewal, while watched > 0
	end      error           // why the hold ended; nil while it lasts
	turnOver chan struct{}   // closed when a handle finishes; nil if nobody waits
}

// newHold starts a hold whose first acquire was sent at sent and asked for
// lease. It is not yet in the client's table. Its expiry timer fires at
// once if the validity has passed meanwhile, and reads h.expiry: so it is
// made idle, and armed only once the hold has it.
func (c *Client) newHold(keys reentrant.Keys, owner string, token uint64, sent time.Time, lease time.Duration) *hold {
	h := &hold{c: c, key: holdKey{keys.Name, owner}, keys: keys, token: token, retired: make(chan struct{})}
	h.validUntil.Store(monoOf(validity(sent, lease)))
	h.expiry = time.AfterFunc(math.MaxInt64, h.checkExpiry)
	h.expiry.Reset(time.Until(validity(sent, lease)))
	return h
}

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

// givenUp reports whether every handle has begun to unlock: an end found
// then is the release's, or a lease running out on a hold being given up,
// and no loss.
func (h *hold) givenUp() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.live == 0
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

// join adds handle l, taken by an acquire sent at sent, to the hold. It
// fails with the hold's end cause if the hold has ended, and starts the
// watchdog's renewal for the first live handle taken without WithLease.
func (h *hold) join(l *Lock, sent time.Time, lease time.Duration) error {
	h.extend(validity(sent, lease))
	h.mu.Lock()
	if h.end != nil {
		h.mu.Unlock()
		return h.endLocked()
	}
	h.handles.add(l)
	h.live++
	startWatch := !l.fixed && h.watched == 0
	if !l.fixed {
		h.watched++
	}
	h.mu.Unlock()
	if !startWatch {
		return nil
	}
	// Watch outside mu: a loss may be reported at once, and takes mu.
	w, err := h.c.wd.Watch(h, sent, h.watchLost)
	if err != nil {
		return ErrClosed // the watchdog closes only with the client
	}
	h.mu.Lock()
	keep := h.end == nil && h.watched > 0 && h.lease == nil
	if keep {
		h.lease = w
	}
	h.mu.Unlock()
	if !keep {
		w.Stop()
	}
	return nil
}

// watchLost is the watchdog's loss signal.
func (h *hold) watchLost(cause error) {
	what := "renewal found it not held"
	if !isNotHeld(cause) {
		what = "its lease ran out before a renewal was confirmed"
	}
	h.lose(lostError(h.key.name, what))
}

// takeTurn waits until no other re-entry through via is held, then
// reserves the turn: goroutines that re-enter through one Context take
// turns, while a nested call through the innermost handle never waits. The
// wait is local and sends nothing. release gives the turn back if the
// re-entry fails.
func (h *hold) takeTurn(ctx context.Context, via *Lock) error {
	for {
		h.mu.Lock()
		switch {
		case h.end != nil:
			h.mu.Unlock()
			return h.endLocked()
		case via.finished:
			h.mu.Unlock()
			return ErrNotHeld
		case via.children == 0:
			via.children++
			h.mu.Unlock()
			return nil
		}
		if h.turnOver == nil {
			h.turnOver = make(chan struct{})
		}
		turn := h.turnOver
		h.mu.Unlock()
		select {
		case <-turn:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// giveTurnBack undoes takeTurn for a re-entry that did not happen.
func (h *hold) giveTurnBack(via *Lock) {
	h.mu.Lock()
	via.children--
	h.passTurnLocked()
	h.mu.Unlock()
}

// passTurnLocked wakes re-entries waiting for their turn. h.mu is held.
func (h *hold) passTurnLocked() {
	if h.turnOver != nil {
		close(h.turnOver)
		h.turnOver = nil
	}
}

// beginUnlock marks l as unlocking. Once the hold's last handle taken
// without WithLease begins to unlock, the renewal stops before the release
// is sent: a hold being given up is never renewed again, whether its
// release succeeds or not, and no renewal answered after the release can
// be mistaken for a loss. It returns ErrNotHeld if l has already finished.
func (h *hold) beginUnlock(l *Lock) error {
	h.mu.Lock()
	if l.finished {
		h.mu.Unlock()
		return errUnlocked(h.key.name)
	}
	var stop *watchdog.Lease
	if !l.unlocking {
		l.unlocking = true
		h.live--
		if !l.fixed {
			if h.watched--; h.watched == 0 {
				stop, h.lease = h.lease, nil
			}
		}
	}
	h.mu.Unlock()
	if stop != nil {
		stop.Stop()
	}
	return nil
}

// finish ends handle l after its release was confirmed, or with its hold.
// The hold itself ends, released, when l was its last handle. It returns
// the hold's end cause when the hold had been lost, nil otherwise.
func (h *hold) finish(l *Lock) error {
	h.mu.Lock()
	if l.finished {
		h.mu.Unlock()
		return nil
	}
	l.finished = true
	h.handles.remove(l)
	if l.parent != nil {
		l.parent.children--
	}
	h.passTurnLocked()
	cause := h.end
	last := h.handles.n == 0 && cause == nil
	if last {
		h.end = errReleased
	}
	h.mu.Unlock()
	l.cancel(context.Canceled)
	if last {
		h.retire()
	}
	if cause == errReleased {
		return nil
	}
	return cause
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
