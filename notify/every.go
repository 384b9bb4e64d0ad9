package notify

import "context"

// SubscribeEvery takes a reference on channel whose mailbox receives every
// message published on it, whole and unaddressed (Delivery.Payload is the
// message as published), besides resyncs; for channels whose messages
// carry no address, such as a protocol of someone else's. It returns once
// Redis has confirmed the subscription, as Subscribe does. Messages it
// gets still reach the mailbox they are addressed to, if any; one it alone
// got is not Unclaimed, and what it never took is dropped when it closes.
func (h *Hub) SubscribeEvery(ctx context.Context, channel string) (*Subscription, error) {
	return h.subscribe(ctx, channel, &Subscription{hub: h, every: true, signal: make(chan struct{}, 1)})
}

// addEvery adds s to the subscriptions that get every message. h.mu is held.
func (e *entry) addEvery(s *Subscription) {
	if e.every == nil {
		e.every = map[*Subscription]bool{}
	}
	e.every[s] = true
}

// deliverEvery gives msg to every SubscribeEvery subscription of e, and
// reports whether there was one. h.mu is held.
func (e *entry) deliverEvery(msg string) bool {
	for s := range e.every {
		s.deliver(Delivery{Payload: msg})
	}
	return len(e.every) > 0
}
