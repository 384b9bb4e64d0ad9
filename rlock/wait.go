package rlock

import (
	"context"
	"errors"
	"time"

	"github.com/batonlock/baton/notify"
	"github.com/batonlock/baton/reentrant"
)

// wait is the baton pass, seen from a waiter. The call subscribes under its
// own waiter ID, then queues in Redis with one acquire; the release that
// frees the lock grants it to the oldest live waiter in the same script and
// publishes one message addressed to it. The grant is the wake-up: Lock
// returns on that message, with no further round trip.
//
// The order is what makes it safe: the subscription is confirmed before the
// waiter queues, so a grant published after it queued reaches it, and a
// grant that finds it gone is passed on (by its leave, or by the client's
// Unclaimed handler). The waiter looks again, with the same acquire, after
// a resync (its connection was lost: a grant may have been missed), when the
// holder's lease should have run out (the first to look grants the head of
// the queue), and every lease/3: each look that finds it still queued is a
// moment known to precede its grant, so a grant arrives with at least 2/3
// of its lease left to rely on. Where liveness is judged by key, the looks
// also keep the key (see lookEvery).
func (a *attempt) wait(ctx context.Context, q *queued, holderTTL time.Duration) (*Lock, error) {
	if a.c.afterFirstAttempt != nil {
		a.c.afterFirstAttempt()
	}
	look := q == nil // not queued yet: look at once
	if look {
		var err error
		if q, err = a.join(ctx, true); err != nil {
			return nil, a.waitError(err)
		}
	}
	defer q.close()
	for {
		if look {
			l, ttl, err := a.try(ctx, q.w)
			if l != nil || err != nil {
				return l, err
			}
			holderTTL = ttl
		}
		d, err := q.sub.Wait(ctx, min(untilExpiry(holderTTL), a.lookEvery()))
		look = true // whatever woke it, look again unless it is the grant
		switch {
		case err == nil && !d.Resync:
			if l := a.granted(ctx, q.w, d.Payload); l != nil {
				return l, nil
			}
		case err == nil, errors.Is(err, notify.ErrWaitTimeout):
			// A resync, or time to look again.
		default:
			a.c.background(func() { a.leave(q.w) })
			return nil, a.waitError(err)
		}
	}
}

// lookEvery is the longest a waiter goes without a look: a third of its
// lease, and, where the namespace judges liveness by key, a third of the
// key's TTL, since each look keeps the key.
func (a *attempt) lookEvery() time.Duration {
	every := a.lease / 3
	if alive := a.keys.AliveTTL(); alive > 0 {
		every = min(every, alive/3)
	}
	return every
}

// queued is a call that may wait: its waiter ID and the subscription its
// grant comes on.
type queued struct {
	w   reentrant.Waiter
	sub *notify.Subscription
}

// join makes the call a waiter, subscribed to its grant channel. Unless
// subscribe is set, it does so only where that costs no round trip (the
// client's grant channel is subscribed for good), and returns nil
// otherwise.
func (a *attempt) join(ctx context.Context, subscribe bool) (*queued, error) {
	if !subscribe && !a.c.grants.ready() {
		return nil, nil
	}
	w := a.keys.Waiter(randomHex(8), a.c.id)
	sub, err := a.c.grants.subscribe(ctx, a.c.hub, w)
	if err != nil {
		return nil, err
	}
	return &queued{w: w, sub: sub}, nil
}

// waiter is the waiter to queue as, none for a call that does not wait.
func (q *queued) waiter() reentrant.Waiter {
	if q == nil {
		return reentrant.Waiter{}
	}
	return q.w
}

func (q *queued) close() {
	if q != nil {
		q.sub.Close()
	}
}

// granted turns a grant message for w into a handle. A grant that is not
// for this call (a stray one) or whose validity has already passed is given
// back, and the wait goes on. A grant whose lease holds only until it is
// confirmed (where liveness is judged by key) is valid for that lease, and
// confirmed in the background: Lock returns without waiting for it.
func (a *attempt) granted(ctx context.Context, w reentrant.Waiter, payload string) *Lock {
	g, err := reentrant.ParseGrant(w.ID + " " + payload)
	if err != nil || g.Owner != a.owner || g.Lock != a.keys.Name || a.queuedAt.IsZero() {
		return nil
	}
	lease := a.lease
	if g.Unconfirmed > 0 {
		lease = min(lease, g.Unconfirmed)
	}
	l, _, err := a.hold(ctx, g.Token, a.queuedAt, lease, HandedOff)
	if err != nil || l == nil {
		return nil
	}
	if lease < a.lease {
		a.c.background(func() { a.confirm(l.hold) })
	}
	return l
}

// confirm renews hold h, granted with a lease that holds only until its
// waiter confirms it, to the lease the call asked for. A confirmation that
// fails leaves the hold to end when that short lease does, unless the
// watchdog renews it first; one that finds the hold gone after its last
// handle began to unlock found the release, not a loss.
func (a *attempt) confirm(h *hold) {
	ctx, cancel := context.WithTimeout(context.Background(), undoTimeout)
	defer cancel()
	sent := time.Now()
	ok, err := a.keys.Renew(ctx, a.c.rdb, h.key.owner, h.token, a.lease)
	switch {
	case err == nil && ok:
		h.extend(validity(sent, a.lease))
	case err == nil && !h.givenUp():
		h.lose(lostError(h.key.name, "renewal found it not held"))
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

// leave takes w out of the queue, bounded in time; if it was granted the
// lock meanwhile, the same script passes it on.
func (a *attempt) leave(w reentrant.Waiter) {
	if w.ID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), undoTimeout)
	defer cancel()
	_, _ = a.keys.Leave(ctx, a.c.rdb, w, a.owner, a.lease, a.newOwner)
}

// giveBack releases a grant of token that arrived dead, so that it passes
// on at once. If the release cannot be confirmed within ctx it goes on in
// the background, and a call with an owner of its own takes a new one: its
// next look must not find the dead grant and report it as its own.
func (a *attempt) giveBack(ctx context.Context, token uint64) {
	if _, err := a.keys.Release(ctx, a.c.rdb, a.owner, token, newRequestID()); err == nil {
		return
	}
	owner := a.owner
	a.c.background(func() { a.release(owner, token) })
	if a.newOwner {
		a.owner = a.c.newOwner()
	}
}
