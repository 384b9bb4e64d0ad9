package rlock

import (
	"context"
	"time"
)

type holdKey struct{ name, owner string }

// holdsOf lists the holds in the table that match selects.
func (c *Client) holdsOf(match func(*hold) bool) []*hold {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*hold
	for _, h := range c.holds {
		if match(h) {
			out = append(out, h)
		}
	}
	return out
}

// forget removes an ended hold from the table.
func (c *Client) forget(h *hold) {
	c.mu.Lock()
	if c.holds[h.key] == h {
		delete(c.holds, h.key)
	}
	c.mu.Unlock()
}

// adopt turns an acquire sent at sent, which granted the hold of token for
// at least lease, into a handle of this client's hold for (lock, owner),
// starting the hold if this client has none. It fails with errDeadGrant
// once the grant's validity has passed, which it checks on every round:
// a round that found its hold ended took time.
func (c *Client) adopt(a *attempt, token uint64, sent time.Time, lease time.Duration, kind AcquireKind) (*Lock, error) {
	key := holdKey{a.keys.Name, a.owner}
	for {
		if !time.Now().Before(validity(sent, lease)) {
			return nil, errDeadGrant
		}
		c.mu.Lock()
		if c.closed.Load() {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		h := c.holds[key]
		if h != nil && h.token > token {
			c.mu.Unlock()
			return nil, errStaleGrant
		}
		var stale *hold
		if h == nil || h.token < token {
			stale, h = h, c.newHold(a.keys, a.owner, token, sent, lease)
			c.holds[key] = h
		}
		c.mu.Unlock()
		if stale != nil {
			// The owner holds the lock under a newer token, so the old
			// hold ended in Redis unnoticed.
			stale.lose(lostError(key.name, "its lease ran out"))
		}
		if c.beforeJoin != nil {
			c.beforeJoin()
		}
		l := newHandle(h, a.ctx, nil, a.cfg, sent, kind)
		if err := h.join(l, sent, lease); err == nil {
			return l, nil
		}
		// h ended between the table and the join: start again without it.
		l.cancel(context.Canceled)
		c.forget(h)
	}
}
