package rlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/batonlock/baton/notify/slot"
	"github.com/batonlock/baton/reentrant"
	"github.com/batonlock/baton/watchdog"
)

// renewal is a hold's registration with its client's watchdog: the hold is
// watched while at least one live handle was taken without WithLease, and
// never again once the hold has ended.
type renewal struct {
	mu      sync.Mutex      // guards the registration: watched, lease and stopped
	watched int             // live handles taken without WithLease
	lease   *watchdog.Lease // the watchdog's, while watched > 0
	stopped bool            // the hold has ended: it is never watched again
}

// add counts a live handle of h taken without WithLease, by an acquire
// sent at sent, and has the watchdog watch h from the first one on,
// unless h has ended.
func (r *renewal) add(h *hold, sent time.Time) error {
	r.mu.Lock()
	r.watched++
	start := r.watched == 1 && !r.stopped
	r.mu.Unlock()
	if !start {
		return nil
	}
	// Watch outside mu: it may report a loss at once, and the loss ends
	// the hold, which stops its renewal.
	w, err := h.c.wd.Watch(h, sent, h.watchLost)
	if err != nil {
		return lower(err) // the watchdog closes only with the client
	}
	r.mu.Lock()
	keep := !r.stopped && r.watched > 0 && r.lease == nil
	if keep {
		r.lease = w
	}
	r.mu.Unlock()
	if !keep {
		w.Stop()
	}
	return nil
}

// drop uncounts a handle taken without WithLease that began to unlock.
// The last one's stops the watch before its release is sent.
func (r *renewal) drop() {
	r.mu.Lock()
	var stop *watchdog.Lease
	if r.watched--; r.watched == 0 {
		stop, r.lease = r.lease, nil
	}
	r.mu.Unlock()
	if stop != nil {
		stop.Stop()
	}
}

// active reports whether the watchdog renews the hold: a live handle was
// taken without WithLease.
func (r *renewal) active() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.watched > 0 && !r.stopped
}

// stop ends the registration for good, for a hold that has ended.
func (r *renewal) stop() {
	r.mu.Lock()
	r.stopped = true
	stop := r.lease
	r.lease = nil
	r.mu.Unlock()
	if stop != nil {
		stop.Stop()
	}
}

// watchLost is the watchdog's loss signal for h.
func (h *hold) watchLost(cause error) {
	what := "renewal found it not held"
	if !errors.Is(cause, watchdog.ErrNotHeld) {
		what = h.leaseRanOut()
	}
	h.cutOff(h.lost(what))
}

// renew is the watchdog's batch: one pipeline of renewal script calls,
// one per cluster slot of the holds' keys (see renewGroups), each renewing
// every hold of its slot whatever its resource's kind. Holds of different
// slots go in different calls on a single node too: that keeps every call
// valid on a cluster, at the cost of a few calls more in one round trip. A
// hold no longer held is watchdog.ErrNotHeld, the watchdog's word for it.
//
// A renewal counts only once replicas have acknowledged it (see
// WithReplicaAcks): one that is not is a transient error, which extends
// nothing.
func (c *Client) renew(ctx context.Context, batch []*hold) []error {
	errs := c.renewFor(ctx, batch, c.cfg.watchdogLease)
	c.acknowledge(ctx, batch, errs)
	return errs
}

// acknowledge has the renewals of batch that succeeded acknowledged by
// replicas, one acknowledgement per master, and records in errs why one
// was not.
func (c *Client) acknowledge(ctx context.Context, batch []*hold, errs []error) {
	if c.acks == nil || c.acks.off.Load() {
		return
	}
	byMaster := map[string]error{} // a master's address → its acknowledgement's error
	for i, h := range batch {
		if errs[i] != nil {
			continue
		}
		key := h.res.id().key
		node, addr, err := c.acks.master(ctx, key)
		if err == nil {
			var done bool
			if err, done = byMaster[addr]; !done {
				err = c.acks.replicatedAt(ctx, node, addr, key)
				byMaster[addr] = err
			}
		}
		errs[i] = err
		h.validity.unacked.Store(errors.Is(err, ErrNotReplicated))
	}
}

// renewFor runs the renewal scripts of batch with lease, in the client's
// format, unacknowledged. The scripts never shorten a lease, so a
// lease of 1 ms only checks that Redis still keeps each hold.
func (c *Client) renewFor(ctx context.Context, batch []*hold, lease time.Duration) []error {
	switch {
	case c.wire != nil:
		return c.wire.renew(ctx, c, batch, lease)
	case c.quorum != nil:
		return c.renewQuorum(ctx, batch, lease)
	}
	return c.renewHolds(ctx, batch, lease, func(h *hold) batonResource { return h.res.(batonResource) })
}

// renewHolds renews batch on c's Redis, each hold as its resource res
// there says: its own, or, in quorum mode, its lock on one node.
func (c *Client) renewHolds(ctx context.Context, batch []*hold, lease time.Duration, res func(*hold) batonResource) []error {
	groups := renewGroups(batch, true)
	refs := make([][]reentrant.HoldRef, len(groups))
	for g, idx := range groups {
		refs[g] = make([]reentrant.HoldRef, len(idx))
		for j, i := range idx {
			refs[g][j] = res(batch[i]).holdRef(batch[i].owner, batch[i].id)
		}
	}
	renewed, groupErrs := reentrant.RenewAll(ctx, c.rdb, refs, lease)
	errs := make([]error, len(batch))
	for g, idx := range groups {
		recordRenewals(batch, idx, renewed[g], groupErrs[g], errs)
	}
	return errs
}

// renewChunk is how many holds one renewal script call renews at most, as
// Redisson's watchdog chunks them: it bounds the time one call keeps the
// server from others.
const renewChunk = 100

// renewGroups groups the indexes of batch into renewal script calls: by
// the cluster slot of the holds' keys when bySlot (all in one otherwise),
// in the order the slots first appear, each cut into chunks of at most
// renewChunk holds.
func renewGroups(batch []*hold, bySlot bool) [][]int {
	inSlot := map[int][]int{} // slot → indexes in batch
	var order []int
	for i, h := range batch {
		s := 0
		if bySlot {
			s = slot.Of(h.res.id().key)
		}
		if _, ok := inSlot[s]; !ok {
			order = append(order, s)
		}
		inSlot[s] = append(inSlot[s], i)
	}
	var groups [][]int
	for _, s := range order {
		for idx := inSlot[s]; len(idx) > 0; {
			n := min(len(idx), renewChunk)
			groups = append(groups, idx[:n:n])
			idx = idx[n:]
		}
	}
	return groups
}

// recordRenewals records in errs the outcome of one renewal script call
// for batch[i], each i in idx: err for all of them when the call failed,
// else watchdog.ErrNotHeld for each one renewed reports not renewed.
func recordRenewals(batch []*hold, idx []int, renewed []bool, err error, errs []error) {
	for j, i := range idx {
		switch {
		case err != nil:
			errs[i] = err
		case !renewed[j]:
			errs[i] = fmt.Errorf("%w: renew %q", watchdog.ErrNotHeld, batch[i].res.name())
		}
	}
}

// extendHold is the watchdog's report of a confirmed renewal of h.
func extendHold(h *hold, deadline time.Time) { h.validity.extend(deadline) }

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
