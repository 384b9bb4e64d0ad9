package rlock

import (
	"context"
	"time"

	"github.com/batonlock/baton/reentrant"
)

// sharedMode is one mode of a shared resource: the RW lock's read or
// write, or a semaphore's permits (one mode per count asked for, all
// with one identity), over reentrant.SharedMode's scripts (batonScripts). Its
// holds' grants come in messages addressed to every waiter of one client a
// grant admitted (reentrant.ParseGrants); notify hands each waiter the
// message, and the waiter reads its own grant from it (attempt.granted).
type sharedMode struct {
	batonScripts
	mode reentrant.SharedMode
}

// sharedKeys are the keys of the resource of kind called name, or say why
// there are none (ErrInvalidName). It sends nothing.
func (c *Client) sharedKeys(kind reentrant.Kind, name string) (reentrant.SharedKeys, error) {
	k, err := c.ns.SharedKeys(kind, name)
	return k, lower(err)
}

// sharedMode is the resource of mode s, as SharedKeys' Read, Write, Permits or
// ModeOf returns it with err; it passes err on. It sends nothing.
func (c *Client) sharedMode(s reentrant.SharedMode, err error) (*sharedMode, error) {
	if err != nil {
		return nil, lower(err)
	}
	return &sharedMode{batonScripts: batonScripts{scripts: s, rdb: c.rdb}, mode: s}, nil
}

func (f *sharedMode) id() resourceID { return resourceID{key: f.mode.Keys().Hash, mode: f.mode.Mode()} }

func (f *sharedMode) name() string { return f.mode.Keys().Name }

func (f *sharedMode) claims(g reentrant.Grant) bool {
	k := f.mode.Keys()
	return g.Kind == k.Kind && g.Mode == f.mode.Mode() && g.Lock == k.Name
}

func (f *sharedMode) waiter(id, client string) reentrant.Waiter {
	return f.mode.Keys().Waiter(id, client)
}

func (f *sharedMode) aliveTTL() time.Duration { return f.mode.Keys().AliveTTL() }

func (f *sharedMode) subscribe(ctx context.Context, c *Client, always bool) (*subscribed, error) {
	return subscribeForGrants(ctx, c, f, always)
}

func (f *sharedMode) holdRef(owner string, id uint64) reentrant.HoldRef {
	return f.mode.HoldRef(owner, id)
}

// handBack leaves g's waiter: its leave gives back the count the message
// granted it while the hold still names it, and no other waiter's; it is
// harmless to repeat, with no request ID.
func (f *sharedMode) handBack(ctx context.Context, owner string, g holdGrant, _ string, lease time.Duration, newOwner bool) error {
	return f.leave(ctx, g.to, owner, lease, newOwner)
}

// forceReleaseShared ends every hold of the shared resource k (every
// mode of it), whoever holds it, and grants what then fits of its queue;
// it reports how many holds it ended. This Client's holds of k that have
// ended by the time its script ran are lost, their Contexts ending with
// ErrLockLost: those in its table before the call (they were granted
// before it, and a hold object is only ever joined under its own hold ID),
// and those whose hold IDs the script returns. A hold taken again while
// the reply was on its way has an ID of its own, and is neither. Holders
// elsewhere find out at their next renewal or release. RWLock.ForceUnlock
// and Semaphore.ForceRelease are this.
func (c *Client) forceReleaseShared(ctx context.Context, k reentrant.SharedKeys) (int64, error) {
	if err := c.checkOpen(); err != nil {
		return 0, err
	}
	gone := map[*hold]bool{}
	for _, h := range c.table.holdsOf(func(h *hold) bool { return h.res.id().key == k.Hash }) {
		gone[h] = true
	}
	n, ended, err := k.ForceRelease(ctx, c.rdb, newRequestID())
	if err != nil {
		return 0, err
	}
	endedIDs := make(map[uint64]bool, len(ended))
	for _, id := range ended {
		endedIDs[id] = true
	}
	for _, h := range c.table.holdsOf(func(h *hold) bool { return h.res.id().key == k.Hash && endedIDs[h.id] }) {
		gone[h] = true
	}
	for h := range gone {
		h.cutOff(h.lost("force-released"))
	}
	return n, nil
}
