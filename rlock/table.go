package rlock

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonlock/baton/reentrant"
)

// holdKey finds a hold in its client's table: one owner's hold on one
// resource mode.
type holdKey struct {
	resource resourceID
	owner    string
}

// holdTable is the holds a Client has, at most one per resource mode and
// owner. A hold leaves it when it ends (hold.end). Once closed, by Close,
// it takes no new hold.
type holdTable struct {
	mu     sync.Mutex // guards the table: holds, and closed's setting
	holds  map[holdKey]*hold
	closed atomic.Bool // set under mu; read without it by calls that fail fast
}

// holdsOf lists the holds in the table for which match is true.
func (t *holdTable) holdsOf(match func(*hold) bool) []*hold {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*hold
	for _, h := range t.holds {
		if match(h) {
			out = append(out, h)
		}
	}
	return out
}

// get is the hold of key, or nil.
func (t *holdTable) get(key holdKey) *hold {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.holds[key]
}

// remove takes h out of the table, unless a newer hold has its place.
func (t *holdTable) remove(h *hold) {
	key := h.key()
	t.mu.Lock()
	if t.holds[key] == h {
		delete(t.holds, key)
	}
	t.mu.Unlock()
}

// close makes the table take no new hold, and returns the holds it has.
func (t *holdTable) close() []*hold {
	t.mu.Lock()
	t.closed.Store(true)
	t.mu.Unlock()
	return t.holdsOf(func(*hold) bool { return true })
}

// holdGrant is a hold an acquire's reply or a grant message granted: its
// ID in Redis and its token, the waiter a message granted it to (none
// for a reply), and the request ID of the acquire whose reply granted it
// (none for a message, or a new owner's acquire).
type holdGrant struct {
	id, token uint64
	to        reentrant.Waiter
	request   string
}

// adopt turns an acquire of a's sent at sent, which granted hold g for at
// least lease, into a handle of this client's hold for a's resource and
// owner, starting the hold if this client has none, or has an older one
// (by ID), which has ended in Redis. It fails with errDeadGrant once the
// grant's validity has passed, which it checks on every round: a round
// that found its hold ended took time.
func (c *Client) adopt(a *attempt, g holdGrant, sent time.Time, lease time.Duration, kind AcquireKind) (*handle, error) {
	t := &c.table
	key := holdKey{a.res.id(), a.owner}
	for {
		if !time.Now().Before(validUntil(sent, lease)) {
			return nil, errDeadGrant
		}
		t.mu.Lock()
		if t.closed.Load() {
			t.mu.Unlock()
			return nil, ErrClosed
		}
		h := t.holds[key]
		if h != nil && h.id > g.id {
			t.mu.Unlock()
			return nil, errStaleGrant
		}
		var stale *hold
		if h == nil || h.id < g.id {
			stale, h = h, c.newHold(a.res, a.owner, g, sent, lease)
			if t.holds == nil {
				t.holds = map[holdKey]*hold{}
			}
			t.holds[key] = h
		}
		t.mu.Unlock()
		if stale != nil {
			// The owner holds the lock under a newer ID, so the old
			// hold ended in Redis unnoticed.
			stale.cutOff(stale.lost("its lease ran out"))
		}
		beforeJoin(c)
		l := newHandle(h, a.ctx, nil, a.cfg, sent, kind)
		if err := h.join(l, sent, lease); err == nil {
			return l, nil
		}
		// h ended between the table and the join: start again without it.
		l.cancel(context.Canceled)
		t.remove(h)
	}
}
