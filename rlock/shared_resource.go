package rlock

import (
	"context"
	"time"

	"github.com/batonlock/baton/reentrant"
)

// shareFace is one face of a multi-holder resource: the RW lock's read or
// write face, or a semaphore's permits (one face per count asked for, all
// with one identity), over reentrant.Share's scripts (batonScripts). Its
// holds' grants come in messages addressed to every waiter of one client a
// grant admitted (reentrant.ParseGrants); notify hands each waiter the
// message, and the waiter reads its own grant from it (attempt.granted).
type shareFace struct {
	batonScripts
	share reentrant.Share
	face  string
}

// sharedKeys are the keys of the resource of kind called name, or say why
// there are none (ErrInvalidName). It sends nothing.
func (c *Client) sharedKeys(kind reentrant.Kind, name string) (reentrant.SharedKeys, error) {
	k, err := c.ns.SharedKeys(kind, name)
	return k, lower(err)
}

// faces names the face of each mode, for resourceID.
var faces = map[reentrant.Mode]string{
	reentrant.ModeRead:    readFace,
	reentrant.ModeWrite:   writeFace,
	reentrant.ModePermits: permitsFace,
}

// shareFace is the face of share s, as SharedKeys' Read, Write, Permits or
// Granted returns it with err; it passes err on. It sends nothing.
func (c *Client) shareFace(s reentrant.Share, err error) (*shareFace, error) {
	if err != nil {
		return nil, lower(err)
	}
	return &shareFace{batonScripts: batonScripts{scripts: s, rdb: c.rdb}, share: s, face: faces[s.Mode()]}, nil
}

func (f *shareFace) id() resourceID { return resourceID{key: f.share.Keys().Hash, face: f.face} }

func (f *shareFace) name() string { return f.share.Keys().Name }

func (f *shareFace) claims(g reentrant.Grant) bool {
	k := f.share.Keys()
	return g.Kind == k.Kind && g.Mode == f.share.Mode() && g.Lock == k.Name
}

func (f *shareFace) waiter(id, client string) reentrant.Waiter {
	return f.share.Keys().Waiter(id, client)
}

func (f *shareFace) aliveTTL() time.Duration { return f.share.Keys().AliveTTL() }

func (f *shareFace) subscribe(ctx context.Context, c *Client, always bool) (*subscribed, error) {
	return subscribeForGrants(ctx, c, f, always)
}

func (f *shareFace) renewal(owner string, id uint64) reentrant.Renewal {
	return f.share.Renewal(owner, id)
}

// handBack leaves g's waiter: its leave gives back the count the message
// granted it while the hold still names it, and no other waiter's; it is
// harmless to repeat, with no request ID.
func (f *shareFace) handBack(ctx context.Context, owner string, g holdGrant, _ string, lease time.Duration, newOwner bool) error {
	return f.leave(ctx, g.to, owner, lease, newOwner)
}

// forceReleaseShared ends every hold of the multi-holder resource k (every
// face of it), whoever holds it, and grants what then fits of its queue;
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
