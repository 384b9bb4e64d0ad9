package notify

import (
	"context"
	"slices"
	"sync/atomic"
	"time"
)

// Subscription is one reference to a channel of a Hub. Wait blocks until a
// message on the channel wakes it. Close it when done; the last reference to
// leave a channel unsubscribes it.
type Subscription struct {
	hub    *Hub
	entry  *entry
	closed atomic.Bool
}

// Channel returns the name of the channel.
func (s *Subscription) Channel() string { return s.entry.channel }

// Wait blocks until the first of: a wake-up (a message on the channel, or the
// subscription being confirmed again after a reconnect), which returns nil;
// timeout elapsing, which returns ErrWaitTimeout (timeout <= 0 means none);
// ctx ending, which returns ctx.Err(); the hub closing, which returns
// ErrClosed. A wake-up that arrived while nobody waited is kept, so Wait then
// returns nil at once.
func (s *Subscription) Wait(ctx context.Context, timeout time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	h := s.hub
	wake, err := h.enqueue(s)
	if wake == nil {
		return err
	}
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-wake:
		return nil
	case <-h.done:
		return ErrClosed
	case <-ctx.Done():
		err = ctx.Err()
	case <-expired:
		err = ErrWaitTimeout
	}
	if h.onAbandon != nil {
		h.onAbandon()
	}
	h.abandon(s.entry, wake)
	return err
}

// Close drops the reference. It is idempotent.
func (s *Subscription) Close() {
	if s.closed.CompareAndSwap(false, true) {
		s.hub.release(s.entry)
	}
}

// enqueue takes a stored permit, returning a nil channel and a nil error, or
// queues a new waiter and returns the channel that wakes it.
func (h *Hub) enqueue(s *Subscription) (chan struct{}, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.closed:
		return nil, ErrClosed
	case s.closed.Load():
		return nil, ErrSubscriptionClosed
	case s.entry.permits > 0:
		s.entry.permits--
		return nil, nil
	}
	wake := make(chan struct{}, 1)
	s.entry.waiters = append(s.entry.waiters, wake)
	return wake, nil
}

// abandon removes a waiter that gave up. If it had already been picked, the
// wake-up it did not take passes on, so that it is never lost.
func (h *Hub) abandon(e *entry, wake chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if i := slices.Index(e.waiters, wake); i >= 0 {
		e.waiters = slices.Delete(e.waiters, i, i+1)
		return
	}
	e.wakeOne()
}

// entry is the hub's state for one referenced channel. The hub's mu guards it.
type entry struct {
	channel   string
	conn      *conn // the connection that serves it
	refs      int
	confirmed bool
	ready     chan struct{} // closed once confirmed; replaced when the subscription is lost
	// wakeAll is set when a confirmed subscription was lost: messages may have
	// been missed, so its next confirmation wakes everybody.
	wakeAll bool
	// moving is set while the server no longer serves the channel on conn
	// (its slot moved) and it waits to be subscribed on the new master.
	moving  bool
	permits int             // wake-ups kept for the next Wait calls, at most refs
	waiters []chan struct{} // first in, first woken; each buffered by one
}

// wakeOne hands one wake-up to the longest waiter, or keeps it as a permit.
func (e *entry) wakeOne() {
	if len(e.waiters) == 0 {
		e.permits = min(e.permits+1, e.refs)
		return
	}
	e.waiters[0] <- struct{}{}
	e.waiters = e.waiters[1:]
}

// wakeEveryone wakes every waiter and gives every other reference a permit:
// those may have checked before the subscription was back, and must check again.
func (e *entry) wakeEveryone() {
	for _, w := range e.waiters {
		w <- struct{}{}
	}
	e.permits = max(e.refs-len(e.waiters), 0)
	e.waiters = nil
}

// confirm records Redis's confirmation of the subscription.
func (e *entry) confirm() {
	if !e.confirmed {
		e.confirmed = true
		close(e.ready)
	}
	if e.wakeAll {
		e.wakeAll = false
		e.wakeEveryone()
	}
}

// lose records that the subscription is gone from the server until confirmed
// again. An entry never confirmed has no caller relying on it yet.
func (e *entry) lose() {
	if e.confirmed {
		e.confirmed = false
		e.wakeAll = true
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

func (e *entry) unref() {
	e.refs--
	e.permits = min(e.permits, e.refs)
}
