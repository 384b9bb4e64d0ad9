package rlock

import (
	"context"
	"strings"
	"sync"

	"github.com/batonlock/baton/notify"
	"github.com/batonlock/baton/reentrant"
)

// grantLine keeps the client's grant channel subscribed for the client's
// lifetime where one channel serves the grants of every lock (a single
// node, or PUBLISH on a cluster): after the first wait, a wait costs no
// SUBSCRIBE. With SPUBLISH the channel is per lock and lives as long as the
// lock has waiters here.
type grantLine struct {
	perLock bool
	// reader reads the messages that arrive, each decoded once for all
	// the waiters it grants.
	reader reentrant.GrantReader

	mu   sync.Mutex           // guards kept, and is never held across a round trip
	kept *notify.Subscription // the lifetime reference, once made
}

// ready reports whether a waiter can subscribe with no round trip.
func (g *grantLine) ready() bool {
	if g.perLock {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.kept != nil
}

// subscribe subscribes waiter w to its grant channel, returning once
// Redis has confirmed the subscription.
func (g *grantLine) subscribe(ctx context.Context, hub *notify.Hub, w reentrant.Waiter) (*notify.Subscription, error) {
	if !g.perLock {
		if err := g.keep(ctx, hub, w.Channel); err != nil {
			return nil, err
		}
	}
	return hub.Subscribe(ctx, w.Channel, w.ID)
}

// keep subscribes channel for the client's lifetime, once. Calls that
// find it not kept yet each subscribe, without the lock: ready must never
// wait for a server (a quorum call's check of every node's line would wait
// for a paused one), nor one call's subscription for another's. The first
// confirmed is kept; a later one only drops its reference.
func (g *grantLine) keep(ctx context.Context, hub *notify.Hub, channel string) error {
	if g.ready() {
		return nil
	}
	sub, err := hub.Subscribe(ctx, channel, "")
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.kept != nil {
		sub.Close()
	} else {
		g.kept = sub // closed with the hub
	}
	return nil
}

// unclaimedGrant is the hub's Unclaimed handler: a grant reached this
// client for a waiter that has gone. Unless the waiter took the hold all
// the same (a look found it before the message came), the grant is passed
// on, in the background, by handBack: a shared resource's hold
// names the waiter until its look claims the count or its leave gives it
// back, and its leave may have given it back already.
func (c *Client) unclaimedGrant(_, msg string) {
	g, err := reentrant.ParseGrant(msg)
	if err != nil {
		return
	}
	res, err := c.grantResource(g)
	if err != nil {
		return
	}
	if h := c.table.get(holdKey{res.id(), g.Owner}); g.Kind == "" && h != nil && h.id == g.HoldID() {
		return
	}
	id, _, _ := strings.Cut(msg, " ")
	hg := holdGrant{id: g.HoldID(), token: g.Token, to: res.waiter(id, c.id)}
	// The granted hold's lease is its waiter's, unknown here: the watchdog's
	// bounds the retries. So is whether its owner was made for the call:
	// the leave is the same for both.
	c.background.run(c.cfg.watchdogLease, func(ctx context.Context) {
		_ = untilAnswered(ctx, func(ctx context.Context) error {
			return res.handBack(ctx, g.Owner, hg, c.cfg.watchdogLease, false)
		})
	})
}
