package rlock

import (
	"context"
	"errors"
	"time"

	"github.com/batonlock/baton/watchdog"
)

// checkLease is the lease a check of the holds renews them for: the
// scripts never shorten a lease, so it only asks whether Redis still keeps
// each hold.
const checkLease = time.Millisecond

// checkHolds is the hub's Resubscribed handler. A pub/sub connection of
// the client came back (or its channels moved): Redis was unreachable, and
// may have come back without its data (a restart without persistence, a
// failover to a replica that had not yet got the holds). A waiter of
// another client may then take a lock this client holds, as soon as its
// own connection is back; so every hold is checked now, not at its next
// renewal a third of the watchdog lease away: the watchdog renews every
// lease it watches at once, and the holds it does not watch (taken
// WithLease) are checked by a renewal for checkLease. A hold not kept is
// cut off with ErrLockLost, one round trip after the connection came back.
// A client with no subscription has no connection to see this on (see
// the package doc). The replica counts of the default acknowledgements
// are read again too.
func (c *Client) checkHolds() {
	c.acks.reconnected()
	c.wd.RenewNow()
	fixed := c.table.holdsOf(func(h *hold) bool { return !h.renewal.active() })
	if len(fixed) == 0 {
		return
	}
	c.background.run(c.cfg.watchdogLease, func(ctx context.Context) {
		for i, err := range c.renewFor(ctx, fixed, checkLease) {
			h := fixed[i]
			// A hold whose handles have all begun to unlock is being
			// released: not found is its release's doing, not a loss.
			if errors.Is(err, watchdog.ErrNotHeld) && !h.handles.givenUp() {
				h.cutOff(h.lost("a check after Redis came back found it not held"))
			}
		}
	})
}
