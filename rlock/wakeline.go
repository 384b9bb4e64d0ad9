package rlock

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/batonlock/baton/notify"
	"github.com/batonlock/baton/reentrant"
)

// wakeLines are where a client's waiters in Redisson's format wait: one
// line per lock, while the lock has waiters here, each with a subscription
// of its own to the lock's channel.
// Redisson's waiters are not queued in Redis; an unlock publishes "0" and
// every waiter anywhere may try again. So that the waiters of one process
// do not all try at once, a line queues them, first come first served, and
// only its head contends with Redis: it alone reads the line's
// subscription and looks. A line is per lock, not per channel: Redisson's
// naming gives N and {N} one channel, and each lock's head must hear
// every message on it, or a waiter for one lock queued behind a waiter
// for the other would never look while the other stays held. When the head leaves (it took the lock, its wait
// ended, or it failed), the next one becomes head and looks at once, so a
// wake-up the old head took and did not use is passed on. A "1" (a write
// lock's unlock) and a resync nudge every waiter of the line to look.
type wakeLines struct {
	mu    sync.Mutex           // guards lines, and every line's queue
	lines map[string]*wakeLine // by the lock's key
}

// wakeLine is one lock's line.
type wakeLine struct {
	lock    string // the lock's key
	channel string
	ready   chan struct{} // closed once the subscription is made, or failed
	sub     *notify.Subscription
	err     error         // why the subscription failed; the line is then gone
	queue   []*wakeTicket // its waiters, the head first
}

// wakeTicket is one waiter's place in a line. It is a wakeSource.
type wakeTicket struct {
	lines *wakeLines
	line  *wakeLine
	nudge chan struct{} // buffered by one: look again now
}

// join puts a waiter at the end of lock's line, which listens on channel,
// and returns once the line's subscription is confirmed. head says the waiter is first: it must
// look at once, since nobody looked for it since the subscription. The
// first waiter of a line subscribes for it, under its own ctx; if that
// fails, the ones queued behind it start a line of their own.
func (ls *wakeLines) join(ctx context.Context, hub *notify.Hub, lock, channel string) (t *wakeTicket, head bool, err error) {
	for {
		t, creator := ls.enqueue(lock, channel)
		if creator {
			sub, err := hub.SubscribeEvery(ctx, channel)
			ls.settle(t.line, sub, err)
			return t, true, err
		}
		select {
		case <-t.line.ready:
		case <-ctx.Done():
			t.Close()
			return nil, false, ctx.Err()
		}
		if t.line.err == nil {
			return t, t.isHead(), nil
		}
	}
}

// enqueue puts a new ticket at the end of lock's line, making the line
// (on channel) if there is none; creator says it did.
func (ls *wakeLines) enqueue(lock, channel string) (t *wakeTicket, creator bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l := ls.lines[lock]
	if l == nil {
		l = &wakeLine{lock: lock, channel: channel, ready: make(chan struct{})}
		if ls.lines == nil {
			ls.lines = map[string]*wakeLine{}
		}
		ls.lines[lock] = l
		creator = true
	}
	t = &wakeTicket{lines: ls, line: l, nudge: make(chan struct{}, 1)}
	l.queue = append(l.queue, t)
	return t, creator
}

// settle records the line's subscription, or its failure: then the line
// is gone, and its waiters, the creator aside, join again.
func (ls *wakeLines) settle(l *wakeLine, sub *notify.Subscription, err error) {
	ls.mu.Lock()
	l.sub, l.err = sub, err
	if err != nil {
		l.queue = nil
		if ls.lines[l.lock] == l {
			delete(ls.lines, l.lock)
		}
	}
	ls.mu.Unlock()
	close(l.ready)
}

// isHead reports whether t is first in its line.
func (t *wakeTicket) isHead() bool {
	t.lines.mu.Lock()
	defer t.lines.mu.Unlock()
	q := t.line.queue
	return len(q) > 0 && q[0] == t
}

// Wait returns the next wake-up of t: for the head, a message on the
// channel, a resync, or notify.ErrWaitTimeout after timeout (the holder's
// lease may have run out); for any other waiter, a nudge, and nothing
// else but ctx's end: it has no timeout of its own, since the head looks
// for it. Every wake-up means the same: look again.
func (t *wakeTicket) Wait(ctx context.Context, timeout time.Duration) (notify.Delivery, error) {
	select {
	case <-t.nudge:
		return notify.Delivery{}, nil
	default:
	}
	if !t.isHead() {
		select {
		case <-t.nudge:
			return notify.Delivery{}, nil
		case <-ctx.Done():
			return notify.Delivery{}, ctx.Err()
		}
	}
	d, err := t.line.sub.Wait(ctx, timeout)
	if err == nil && (d.Resync || d.Payload == reentrant.RedissonReadUnlockMessage) {
		t.lines.nudgeAll(t.line)
	}
	return notify.Delivery{Resync: d.Resync}, err
}

// nudgeAll has every waiter of l look again.
func (ls *wakeLines) nudgeAll(l *wakeLine) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for _, t := range l.queue {
		t.poke()
	}
}

// poke has t look again, once, whenever it next waits.
func (t *wakeTicket) poke() {
	select {
	case t.nudge <- struct{}{}:
	default:
	}
}

// Close takes t out of its line. A head that leaves makes the next waiter
// head, and has it look at once; the last one to leave unsubscribes.
func (t *wakeTicket) Close() {
	ls, l := t.lines, t.line
	ls.mu.Lock()
	i := slices.Index(l.queue, t)
	if i < 0 {
		ls.mu.Unlock()
		return
	}
	l.queue = slices.Delete(l.queue, i, i+1)
	var unsub *notify.Subscription
	switch {
	case len(l.queue) == 0:
		if ls.lines[l.lock] == l {
			delete(ls.lines, l.lock)
		}
		unsub = l.sub
	case i == 0:
		l.queue[0].poke()
	}
	ls.mu.Unlock()
	if unsub != nil {
		unsub.Close()
	}
}
