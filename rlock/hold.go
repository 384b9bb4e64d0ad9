package rlock

import (
	"context"
	"time"
)

// hold is one owner's hold on one resource mode, within one Client (see
// the glossary in doc.go); every handle of it is a thin view of it. A hold
// starts with the acquire that took or first re-entered the resource here,
// and ends once (end.go): when its last handle has unlocked, or when it is
// lost or its client closes. Holds are told apart by ID: every new hold in
// Redis gets a higher one (a plain lock's token; a shared resource's
// hold ID, since a read's token is shared), and the scripts act on a hold
// only under its ID.
//
// Its jobs are parts of it, each the only owner of its state:
//   - validity (validity.go): until when Redis surely still keeps the
//     hold, and the timer that ends it then. Lock-free.
//   - renewal (renewal.go): its registration with the watchdog, while a
//     live handle was taken without WithLease.
//   - handles (handles.go): its handles, and the closing of the set,
//     which decides the end and its cause.
//   - turns (turns.go): the local order of re-entries through each of
//     its handles' Contexts.
//
// The hold itself keeps what never changes, and the end, which every end
// goes through: it stops the parts and reports a loss.
type hold struct {
	c     *Client
	res   resource
	owner string
	id    uint64 // its ID in Redis (reentrant's HoldID)
	token uint64 // its fencing token

	validity validity
	renewal  renewal
	handles  handleSet
	turns    turns

	done chan struct{} // closed once the end is complete: every Context has ended
}

// newHold starts hold g, whose first acquire was sent at sent and asked
// for lease. It is not yet in the client's table.
func (c *Client) newHold(res resource, owner string, g holdGrant, sent time.Time, lease time.Duration) *hold {
	h := &hold{c: c, res: res, owner: owner, id: g.id, token: g.token, done: make(chan struct{})}
	h.validity.start(validUntil(sent, lease), h.atValidity)
	return h
}

// key is where the hold is in its client's table.
func (h *hold) key() holdKey { return holdKey{h.res.id(), h.owner} }

// join adds handle l, taken by an acquire sent at sent with lease, to the
// hold. It fails with the hold's end cause if the hold has ended, and
// starts the watchdog's renewal for the first live handle taken without
// WithLease.
func (h *hold) join(l *handle, sent time.Time, lease time.Duration) error {
	h.validity.extend(validUntil(sent, lease))
	if err := h.handles.add(l); err != nil {
		return err
	}
	if l.fixed {
		return nil
	}
	return h.renewal.add(h, sent)
}

// beginUnlock marks l as unlocking. Once the hold's last handle taken
// without WithLease begins to unlock, the renewal stops before the release
// is sent: a hold being given up is never renewed again, whether its
// release succeeds or not, and no renewal answered after the release can
// be mistaken for a loss. It returns ErrNotHeld if l has already finished.
func (h *hold) beginUnlock(l *handle) error {
	began, finished := h.handles.beginUnlock(l)
	if finished {
		return errUnlocked(h.res.name())
	}
	if began && !l.fixed {
		h.renewal.drop()
	}
	return nil
}

// finishHandle finishes handle l, after its release was confirmed or with
// its hold: l leaves the hold, gives back the turn it took, and its
// Context ends. When l was the hold's last handle, that ends the hold,
// released. It returns the hold's end cause when the hold had been lost,
// nil otherwise.
func (h *hold) finishHandle(l *handle) error {
	left, last, cause := h.handles.leave(l)
	if !left {
		return nil // finished before
	}
	h.turns.finished(l)
	l.cancel(context.Canceled)
	if last {
		h.end(errReleased, nil)
	}
	if cause == errReleased {
		return nil
	}
	return cause
}
