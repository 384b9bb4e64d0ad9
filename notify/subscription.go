package notify

import (
	"context"
	"strings"
	"sync/atomic"
	"time"
)

// Delivery is what a Subscription receives.
type Delivery struct {
	// Payload is the message addressed to the subscription, less its
	// address. Empty for a resync.
	Payload string
	// Resync reports that the channel was subscribed again after the
	// connection was lost or moved: messages published meanwhile reached
	// nobody, so whatever the subscriber was waiting for must be checked at
	// the source.
	Resync bool
}

// Subscription is one reference to a channel of a Hub, and the mailbox of
// the messages addressed to its ID. Close it when done; the last reference
// to leave a channel unsubscribes it.
type Subscription struct {
	hub    *Hub
	entry  *entry
	id     string
	every  bool // receives every message of the channel (SubscribeEvery)
	closed atomic.Bool

	// Guarded by the hub's mu.
	mail   []Delivery    // delivered, not yet taken by Wait
	signal chan struct{} // buffered by one: mail is not empty
}

// Channel returns the name of the channel.
func (s *Subscription) Channel() string { return s.entry.channel }

// ID returns the address the subscription receives messages for.
func (s *Subscription) ID() string { return s.id }

// Wait returns the next delivery: a message addressed to this subscription,
// or a resync. Deliveries that came while nobody waited are kept, in order,
// so Wait then returns at once. It returns ErrWaitTimeout when timeout
// elapses first (timeout <= 0 means none), ctx.Err() when ctx ends,
// ErrClosed when the hub closes, and ErrSubscriptionClosed after Close.
func (s *Subscription) Wait(ctx context.Context, timeout time.Duration) (Delivery, error) {
	if err := ctx.Err(); err != nil {
		return Delivery{}, err
	}
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	h := s.hub
	for {
		if d, ok, err := h.take(s); ok || err != nil {
			return d, err
		}
		select {
		case <-s.signal:
		case <-h.done:
			return Delivery{}, ErrClosed
		case <-ctx.Done():
			return Delivery{}, ctx.Err()
		case <-expired:
			return Delivery{}, ErrWaitTimeout
		}
	}
}

// Close drops the reference and the mailbox. Messages delivered to it and
// never taken go to the hub's Unclaimed handler: whatever they offered is
// handed back. It returns at once; an unsubscribe it causes is sent in the
// background, bounded by the hub's Close. It is idempotent.
func (s *Subscription) Close() {
	if s.closed.CompareAndSwap(false, true) {
		s.hub.release(s)
	}
}

// take pops the oldest delivery of s. ok is false when there is none.
func (h *Hub) take(s *Subscription) (d Delivery, ok bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.closed:
		return Delivery{}, false, ErrClosed
	case s.closed.Load():
		return Delivery{}, false, ErrSubscriptionClosed
	case len(s.mail) == 0:
		return Delivery{}, false, nil
	}
	d = s.mail[0]
	s.mail = s.mail[1:]
	return d, true, nil
}

// deliver puts d into s's mailbox. h.mu is held.
func (s *Subscription) deliver(d Delivery) {
	s.mail = append(s.mail, d)
	select {
	case s.signal <- struct{}{}:
	default:
	}
}

// address splits a message into the IDs it is addressed to (the text
// before the first space, IDs separated by commas) and its payload.
func address(msg string) (ids []string, payload string) {
	addr, payload, _ := strings.Cut(msg, " ")
	return strings.Split(addr, ","), payload
}

// entry is the hub's state for one referenced channel. The hub's mu guards it.
type entry struct {
	channel   string
	conn      *conn // the connection that serves it
	refs      int
	confirmed bool
	ready     chan struct{} // closed once confirmed; replaced when the subscription is lost
	// resync is set when a confirmed subscription was lost: messages may
	// have been missed, so its next confirmation resyncs every mailbox.
	resync bool
	// moving is set while the server no longer serves the channel on conn
	// (its slot moved) and it waits to be subscribed on the new master.
	moving  bool
	mailbox map[string]*Subscription // by ID; subscriptions without an ID have none
	every   map[*Subscription]bool   // SubscribeEvery's subscriptions; nil until one comes
}

// route hands a message to every SubscribeEvery subscription of e, and to
// each mailbox of e it is addressed to; e is nil when the hub no longer
// serves the channel on the connection the message came on, and then no
// one claims it. It returns what nobody claims, as messages for Unclaimed:
// the message as it came when its one address is unclaimed, "<id>
// <payload>" for each unclaimed ID of an address that lists several. A
// message a SubscribeEvery subscription took is claimed. The hub's mu is
// held.
func route(e *entry, msg string) (unclaimed []string) {
	var mailbox map[string]*Subscription
	everyTook := false
	if e != nil {
		mailbox, everyTook = e.mailbox, e.deliverEvery(msg)
	}
	ids, payload := address(msg)
	for _, id := range ids {
		switch s := mailbox[id]; {
		case s != nil:
			s.deliver(Delivery{Payload: payload})
		case everyTook:
		case len(ids) == 1:
			unclaimed = append(unclaimed, msg)
		default:
			unclaimed = append(unclaimed, id+" "+payload)
		}
	}
	return unclaimed
}

// confirm records Redis's confirmation of the subscription. It reports
// whether the confirmation was of a lost subscription, whose mailboxes it
// resynced.
func (e *entry) confirm() (resynced bool) {
	if !e.confirmed {
		e.confirmed = true
		close(e.ready)
	}
	if !e.resync {
		return false
	}
	e.resync = false
	for _, s := range e.mailbox {
		s.deliver(Delivery{Resync: true})
	}
	for s := range e.every {
		s.deliver(Delivery{Resync: true})
	}
	return true
}

// lose records that the subscription is gone from the server until confirmed
// again. An entry never confirmed has no caller relying on it yet.
func (e *entry) lose() {
	if e.confirmed {
		e.confirmed = false
		e.resync = true
		e.ready = make(chan struct{})
	}
}

// move records that the server dropped the subscription because the slot
// went to another master. It reports false when a move is already under way.
func (e *entry) move() bool {
	if e.moving {
		return false
	}
	e.lose()
	e.moving = true
	return true
}
