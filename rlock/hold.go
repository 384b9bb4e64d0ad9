package rlock

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonlock/baton/reentrant"
	"github.com/batonlock/baton/watchdog"
)

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

// givenUp reports whether every handle has begun to unlock: an end found
// then is the release's, or a lease running out on a hold being given up,
// and no loss.
func (h *hold) givenUp() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.live == 0
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
