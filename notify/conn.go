package notify

import (
	"errors"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/notify/slot"
)

// Reconnects that fail in a row wait this long, doubling up to maxBackoff, so
// that a server that is down does not cause a hot loop.
const (
	minBackoff = 50 * time.Millisecond
	maxBackoff = time.Second
)

// conn is one pub/sub connection and its reader goroutine.
//
// The reader uses its own loop over ReceiveTimeout rather than go-redis's
// Channel, which hides errors and so the moment to resync. Any error
// closes the PubSub and the reader builds a new one, except a MOVED reply:
// that concerns the channels of one slot, which move to their new master
// while the others stay (see reroute). go-redis has by then already redialled
// and resubscribed inside the failed call (all shard channels in one
// SSUBSCRIBE, which a cluster may refuse with CROSSSLOT); that connection is
// thrown away with the PubSub, at the cost of one extra dial per failure, so
// the hub alone decides what is subscribed where.
type conn struct {
	hub *Hub
	key string // routing key; "" unless routed per cluster master
	// ps is replaced only by the reader, holding io, so holders of io and
	// the reader itself may use it without mu.
	ps *redis.PubSub
	// sent counts per channel the commands sent on ps whose replies have not
	// been read. The hub's mu guards it; it starts empty with each ps.
	sent map[string]pending
}

// pending counts a channel's commands awaiting their replies.
type pending struct{ subs, unsubs int }

// count adds d to the commands awaiting replies for channel.
func (c *conn) count(channel string, d pending) {
	p := c.sent[channel]
	p.subs += d.subs
	p.unsubs += d.unsubs
	if p == (pending{}) {
		delete(c.sent, channel)
	} else {
		c.sent[channel] = p
	}
}

// run is the reader goroutine. It exits when the hub closes or when the
// connection no longer serves any channel after a reconnect.
func (c *conn) run() {
	defer c.hub.wg.Done()
	var delay time.Duration
	for {
		start := time.Now()
		c.receive()
		_ = c.ps.Close() // so that sends racing with the reconnect fail fast
		// A connection that lived a health interval was fine: replace it at
		// once. One that failed sooner points at a lasting fault: back off.
		if time.Since(start) >= c.hub.interval {
			delay = 0
		} else {
			delay = min(max(2*delay, minBackoff), maxBackoff)
		}
		if !c.hub.sleep(delay) || !c.recycle() {
			return
		}
	}
}

// receive reads and applies replies until the connection must be replaced.
func (c *conn) receive() {
	h := c.hub
	pinged := false
	for {
		msg, err := c.ps.ReceiveTimeout(h.life, h.interval)
		switch {
		case err == nil:
			pinged = false
			h.reroute(c, h.dispatch(c, msg)...)
		case !pinged && isTimeout(err):
			// Idle for an interval: the PING must be answered within the next.
			pinged = true
			if c.ps.Ping(h.life) != nil {
				return
			}
		default:
			slot, moved := movedSlot(err)
			if !moved {
				return
			}
			pinged = false // a reply is proof of life too
			h.reroute(c, h.slotMoved(c, slot)...)
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// dispatch applies one reply read from c. It returns the entries that must
// move to another connection, if the reply says so.
func (h *Hub) dispatch(c *conn, msg any) []*entry {
	switch m := msg.(type) {
	case *redis.Message:
		h.mu.Lock()
		unclaimed := route(h.served(c, m.Channel), m.Payload)
		h.mu.Unlock()
		for _, msg := range unclaimed {
			h.unclaimed(m.Channel, msg)
		}
	case *redis.Subscription:
		h.mu.Lock()
		moved, resynced := h.ack(c, m.Kind, m.Channel)
		h.mu.Unlock()
		if resynced {
			h.resubscribed()
		}
		return moved
	}
	return nil // *redis.Pong: proof of life is all it carries
}

// ack applies a subscribe or unsubscribe reply. It returns the entries that
// must move to another connection, if any, and whether the reply confirmed
// again a subscription that had been lost (its mailboxes got a resync).
//
// Replies come in the order the commands were sent, and c.sent counts the
// commands still unanswered. An entry is confirmed only by the reply to the
// last SUBSCRIBE sent for it: after SUBSCRIBE, UNSUBSCRIBE, SUBSCRIBE of one
// channel, the first reply must not confirm the second reference, because
// the UNSUBSCRIBE still opens a gap after it. An UNSUBSCRIBE reply that no
// sent command accounts for is the server dropping the channel: its cluster
// slot went to another master (migration, failover). If the channel is still
// referenced, it and the rest of its slot must move there, and their waiters
// are woken once confirmed again, since releases published meanwhile reached
// nobody.
func (h *Hub) ack(c *conn, kind, channel string) (moved []*entry, resynced bool) {
	p := c.sent[channel]
	e := h.served(c, channel)
	switch kind {
	case "subscribe", "ssubscribe":
		if p.subs == 0 {
			return nil, false
		}
		c.count(channel, pending{subs: -1})
		if p.subs == 1 && e != nil {
			return nil, e.confirm()
		}
	case "unsubscribe", "sunsubscribe":
		if p.unsubs == 0 {
			if e == nil {
				return nil, false
			}
			return h.moveSlot(c, slot.Of(channel)), false
		}
		c.count(channel, pending{unsubs: -1})
	}
	return nil, false
}

// recycle gives c a new PubSub and subscribes again every channel c served,
// on another connection if its route changed. It reports false when the
// reader should exit: the hub closed, or c serves nothing any more.
func (c *conn) recycle() bool {
	h := c.hub
	if h.lockIO(h.life) != nil {
		return false
	}
	defer h.unlockIO()
	h.be.refresh(h.life)
	lost, ok := h.detach(c)
	if !ok {
		return false
	}
	for _, e := range lost {
		key, err := h.be.route(h.life, e.channel)
		if err != nil {
			key = c.key // stay: a failing subscribe here leads to another try
		}
		h.subscribeVia(e, key)
	}
	return h.keepIfServing(c)
}

// detach marks every entry served by c lost and gives c a new, unused PubSub.
// It reports false when the hub is closed. The caller holds io.
func (h *Hub) detach(c *conn) (lost []*entry, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	// A connection retired after its channels moved away has no successor.
	if h.closed || h.conns[c.key] != c {
		return nil, false
	}
	for _, e := range h.entries {
		if e.conn == c {
			e.lose()
			lost = append(lost, e)
		}
	}
	c.ps = h.be.open(h.life, c.key) // no I/O until the first subscribe
	c.sent = map[string]pending{}
	return lost, true
}

// keepIfServing retires c when no entry uses it any more: an unused PubSub is
// not worth health-checking, and reading it would dial a node of the client's
// choosing. The next Subscribe routed to c's key opens a new one.
func (h *Hub) keepIfServing(c *conn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.entries {
		if e.conn == c {
			return true
		}
	}
	if h.conns[c.key] == c {
		delete(h.conns, c.key)
	}
	_ = c.ps.Close()
	return false
}

// sleep waits d, or reports false at once when the hub closes.
func (h *Hub) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-h.done:
		return false
	}
}
