package rlock

import (
	"context"
	"errors"
	"time"

	"github.com/batonlock/baton/notify"
	"github.com/batonlock/baton/reentrant"
)

// unknownTTLWait bounds a wait when Redis reports no expiry on the
// holder's key (someone PERSISTed it): a safety net, not a poll.
const unknownTTLWait = time.Second

// wait waits for the call's grant, until ctx ends. s is the call's
// subscription as a waiter, confirmed before its last acquire queued it
// (holderTTL is the holder's remaining lease as that acquire read it); or
// nil, and then wait subscribes and looks at once, before it waits.
//
// It returns the handle as soon as the grant message comes, with no further
// round trip, or as soon as a look finds the grant (a look is try as the
// same waiter). It looks after a resync (a grant may have been missed),
// when the holder's lease should have run out, and at least every
// lookEvery. Otherwise it returns ErrNotObtained (ctx ended, as
// waitError says), ErrClosed, or an acquire's error; a waiter that stops
// waiting leaves the queue in the background, which passes on a grant it
// was handed meanwhile. See "Waiting" in doc.go.
func (a *attempt) wait(ctx context.Context, s *subscribed, holderTTL time.Duration) (*handle, error) {
	afterFirstAttempt(a.c)
	look := s == nil // not queued yet: look once subscribed, if told to
	if look {
		var err error
		if s, err = a.subscribe(ctx, true); err != nil {
			return nil, a.waitError(err)
		}
		look = s.look
	}
	defer s.close()
	for {
		if look {
			l, ttl, err := a.try(ctx, s.w)
			if l != nil || err != nil {
				return l, err
			}
			holderTTL = ttl
		}
		d, err := s.sub.Wait(ctx, min(untilExpiry(holderTTL), a.lookEvery()))
		look = true // whatever woke it, look again unless it is the grant
		switch {
		case err == nil && !d.Resync && s.grants:
			if l, err := a.granted(ctx, s.w, d.Payload); l != nil || err != nil {
				if err != nil {
					a.leaveNow(s.w)
				}
				return l, err
			}
		case err == nil, errors.Is(err, notify.ErrWaitTimeout):
			// A resync, a nudge, or time to look again.
		default:
			a.leaveNow(s.w)
			return nil, a.waitError(err)
		}
	}
}

// waitQueued waits, until ctx ends, for the grant of the call that
// another script (a lock set's, sent at sent) queued as s's waiter while
// the holder's lease was holderTTL: as run waits after its first acquire.
func (a *attempt) waitQueued(ctx context.Context, s *subscribed, holderTTL time.Duration, sent time.Time) (*handle, error) {
	a.queuedAt = sent
	return a.observeWait(func() (*handle, error) { return a.wait(ctx, s, holderTTL) })
}

// lookEvery is the longest a waiter goes without a look: a third of its
// lease, and, where the namespace judges liveness by key, a third of the
// key's TTL, since each look keeps the key.
func (a *attempt) lookEvery() time.Duration {
	every := a.lease / 3
	if alive := a.res.aliveTTL(); alive > 0 {
		every = min(every, alive/3)
	}
	return every
}

// subscribed is a call that may wait: its waiter, where its wake-ups come,
// and what they mean, as its resource says.
type subscribed struct {
	w   reentrant.Waiter
	sub wakeSource
	// grants says a message is a grant to claim (baton's format); else
	// every wake-up is a nudge to look again (Redisson's).
	grants bool
	// look says the waiter looks at once once subscribed; it does not
	// while another waiter of its process looks for it (wakeline.go).
	look bool
}

// wakeSource is where a waiter's wake-ups come: a notify.Subscription, or
// a place in a local line (wakeline.go).
type wakeSource interface {
	// Wait returns the next wake-up, or notify.ErrWaitTimeout after
	// timeout, or the error that ends the wait (as notify's Wait).
	Wait(ctx context.Context, timeout time.Duration) (notify.Delivery, error)
	// Close leaves, handing on what it was given.
	Close()
}

// subscribe makes the call a waiter of its resource (see
// resource.subscribe).
func (a *attempt) subscribe(ctx context.Context, always bool) (*subscribed, error) {
	return a.res.subscribe(ctx, a.c, always)
}

// waiter is the waiter to queue as, none for a call that does not wait.
func (s *subscribed) waiter() reentrant.Waiter {
	if s == nil {
		return reentrant.Waiter{}
	}
	return s.w
}

// close ends the subscription, if any.
func (s *subscribed) close() {
	if s != nil {
		s.sub.Close()
	}
}

// granted turns a grant message for w into a handle. A message that
// cannot be this call's grant (another owner's or resource's, or one
// before the call queued) is ignored: the next look finds the grant the
// call was handed, if any. A grant whose validity has already passed is
// given back (see claim). In both cases granted returns nil and the wait
// goes on. A grant whose lease holds only until it is confirmed (where
// liveness is judged by key) is valid for that lease, and confirmed in the
// background: the call returns without waiting for it. A grant replicas
// did not acknowledge ends the call with claim's error.
func (a *attempt) granted(ctx context.Context, w reentrant.Waiter, payload string) (*handle, error) {
	g, err := a.c.grants.reader.Grant(w.ID, payload)
	if err != nil || g.Owner != a.owner || !a.res.claims(g) || a.queuedAt.IsZero() {
		return nil, nil
	}
	lease := a.lease
	if g.Unconfirmed > 0 {
		lease = min(lease, g.Unconfirmed)
	}
	l, _, err := a.claim(ctx, holdGrant{id: g.HoldID(), token: g.Token, to: w}, a.queuedAt, lease, HandedOff)
	if errors.Is(err, ErrNotObtained) {
		return nil, err
	}
	if err != nil || l == nil {
		return nil, nil
	}
	if lease < a.lease {
		a.c.background.run(undoTimeout, func(ctx context.Context) { a.confirm(ctx, l.hold) })
	}
	return l, nil
}

// confirm renews hold h, granted with a lease that holds only until its
// waiter confirms it, to the lease the call asked for. A confirmation that
// fails leaves the hold to end when that short lease does, unless the
// watchdog renews it first; one that finds the hold gone after its last
// handle began to unlock found the release, not a loss.
func (a *attempt) confirm(ctx context.Context, h *hold) {
	sent := time.Now()
	ok, err := a.res.renew(ctx, h.owner, h.id, a.lease)
	switch {
	case err == nil && ok:
		// Only an acknowledged renewal extends the validity.
		err := a.c.acks.replicated(ctx, a.res.id().key)
		if err == nil {
			h.validity.extend(validUntil(sent, a.lease))
		}
		h.validity.unacked.Store(errors.Is(err, ErrNotReplicated))
	case err == nil && !h.handles.givenUp():
		h.cutOff(h.lost("renewal found it not held"))
	}
}

// untilExpiry is how long to wait for a holder whose PTTL read ttl. Redis
// keeps a key through the whole millisecond in which it expires, and PTTL
// reads 0 there; a look must not land in it, so the wait runs a millisecond
// past. A negative PTTL means the key has no expiry at all.
func untilExpiry(ttl time.Duration) time.Duration {
	if ttl < 0 {
		return unknownTTLWait
	}
	return ttl + time.Millisecond
}
