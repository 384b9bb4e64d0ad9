package rlock

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonlock/baton/reentrant"
	"github.com/batonlock/baton/watchdog"
)

// renew is the watchdog's batch: one pipeline of renew scripts.
func (c *Client) renew(ctx context.Context, batch []*hold) []error {
	renewals := make([]reentrant.Renewal, len(batch))
	for i, h := range batch {
		renewals[i] = reentrant.Renewal{Keys: h.keys, Owner: h.key.owner, Token: h.token}
	}
	renewed, errs := reentrant.RenewAll(ctx, c.rdb, renewals, c.cfg.watchdogLease)
	for i := range errs {
		if errs[i] == nil && !renewed[i] {
			errs[i] = fmt.Errorf("%w: renew %q", watchdog.ErrNotHeld, batch[i].keys.Name)
		}
	}
	return errs
}

func isNotHeld(err error) bool { return errors.Is(err, watchdog.ErrNotHeld) }

// RenewalStats counts what the watchdog has done since New.
type RenewalStats struct {
	Ticks      uint64 // ticks of the renewal schedule (every watchdog lease/3)
	RenewCalls uint64 // renewal pipelines sent
	Renewed    uint64 // leases renewed
	Failed     uint64 // renewals answered with a transient error, or not sent in time
	Lost       uint64 // leases the watchdog found lost
}

// RenewalStats reports what the watchdog has done since New.
func (c *Client) RenewalStats() RenewalStats { return RenewalStats(c.wd.Stats()) }

// watchLost is the watchdog's loss signal.
func (h *hold) watchLost(cause error) {
	what := "renewal found it not held"
	if !isNotHeld(cause) {
		what = "its lease ran out before a renewal was confirmed"
	}
	h.lose(lostError(h.key.name, what))
}
