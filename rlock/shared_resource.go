package rlock

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/reentrant"
)

// shareFace is one face of a multi-holder resource: the RW lock's read or
// write face, over reentrant.Share's scripts. Its holds' grants come in
// messages addressed to every waiter of one client a grant admitted
// (reentrant.ParseGrants); notify hands each waiter the message, and the
// waiter reads its own grant from it (attempt.granted).
type shareFace struct {
	share reentrant.Share
	face  string
	rdb   redis.Scripter
}

// sharedResource is the face of mode of the resource of kind called name,
// or says why there is none (ErrInvalidName). It sends nothing.
func (c *Client) sharedResource(kind reentrant.Kind, mode reentrant.Mode, name string) (*shareFace, error) {
	k, err := c.ns.SharedKeys(kind, name)
	if err != nil {
		return nil, lower(err)
	}
	var s reentrant.Share
	face := readFace
	switch mode {
	case reentrant.ModeRead:
		s, err = k.Read()
	case reentrant.ModeWrite:
		s, err = k.Write()
		face = writeFace
	default:
		err = fmt.Errorf("%w: no face of mode %q", ErrInvalidOption, mode)
	}
	if err != nil {
		return nil, err
	}
	return &shareFace{share: s, face: face, rdb: c.rdb}, nil
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

func (f *shareFace) acquire(ctx context.Context, call acquireCall) (reentrant.AcquireResult, error) {
	if call.newOwner {
		return f.share.AcquireNew(ctx, f.rdb, call.owner, call.lease, call.waiter)
	}
	return f.share.Acquire(ctx, f.rdb, call.owner, call.requestID, call.lease, call.token, call.waiter)
}

func (f *shareFace) release(ctx context.Context, owner string, token uint64, requestID string) (reentrant.ReleaseResult, error) {
	return f.share.Release(ctx, f.rdb, owner, token, requestID)
}

func (f *shareFace) leave(ctx context.Context, w reentrant.Waiter, owner string, lease time.Duration, newOwner bool) error {
	_, err := f.share.Leave(ctx, f.rdb, w, owner, lease, newOwner)
	return err
}

func (f *shareFace) renew(ctx context.Context, owner string, token uint64, lease time.Duration) (bool, error) {
	return f.share.Renew(ctx, f.rdb, owner, token, lease)
}

func (f *shareFace) renewal(owner string, token uint64) reentrant.Renewal {
	return f.share.Renewal(owner, token)
}
