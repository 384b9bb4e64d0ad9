package rlock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// The owner policy: who a call acts as. Every rule of it is in this file.
//
// A call acts as one owner, and its hold is that owner's hold. For a call
// on resource mode res with ctx, the owner is, first that applies:
//   - that of the handle of res from this Client that ctx carries: the
//     call re-enters through it (callOwner.via);
//   - for an RW lock's read, that of a write handle of the same RW lock
//     ctx carries: a read inside the write;
//   - WithOwner's, a given owner: one the caller chose, for calls and
//     processes to act as one;
//   - one made for the call (Client.newOwner), which no other call shares.
//
// A semaphore's Acquire always acts as an owner made for it: permits are
// counted, not re-entered, so a Permit's Context gives no owner, and
// WithOwner is refused. An owner made for a call may be replaced by
// another (callOwner.remake); any other owner is the caller's, and stays.

// ownerRule is how a kind of call departs from the plain lock's owner
// policy; its zero value is the plain lock's, which an RW lock's write
// follows too.
type ownerRule struct {
	// insideWrite, for an RW lock's read, is the RW lock's write mode: a
	// write handle of it in ctx gives the owner.
	insideWrite *sharedMode
	// ownOnly: the call always acts as an owner made for it (a
	// semaphore's Acquire); WithOwner is refused.
	ownOnly bool
}

// callOwner is who one call acts as.
type callOwner struct {
	owner string
	// newOwner: the owner was made for this call, not taken from ctx.
	newOwner bool
	// via is the handle this call re-enters through, when ctx carries one
	// of this resource from this client; nil otherwise.
	via *handle
}

// ownerOf is the owner of a call on res with ctx under rule, or
// ErrInvalidOption for a WithOwner the rule refuses.
func (c *Client) ownerOf(ctx context.Context, res resource, rule ownerRule) (callOwner, error) {
	if rule.ownOnly {
		if _, ok := OwnerFrom(ctx); ok {
			return callOwner{}, fmt.Errorf("%w: WithOwner for semaphore %q: permits are not re-entered, each Acquire is its own owner", ErrInvalidOption, res.name())
		}
		return callOwner{owner: c.newOwner(), newOwner: true}, nil
	}
	if via := c.handleIn(ctx, res.id()); via != nil {
		return callOwner{owner: via.hold.owner, via: via}, nil
	}
	if rule.insideWrite != nil {
		if w := c.handleIn(ctx, rule.insideWrite.id()); w != nil {
			return callOwner{owner: w.hold.owner}, nil
		}
	}
	if owner, ok := OwnerFrom(ctx); ok {
		return callOwner{owner: owner}, nil
	}
	return callOwner{owner: c.newOwner(), newOwner: true}, nil
}

// remake replaces an owner made for the call by a new one, so that the
// call's next acquire cannot find a hold of the old one as its own. An
// owner from ctx is the caller's, and stays.
func (o *callOwner) remake(c *Client) {
	if o.newOwner {
		o.owner = c.newOwner()
	}
}

// newOwner makes an owner ID no other call shares: the client's ID and 128
// random bits. Most Lock calls make one, so it is built in place: one
// allocation, the string.
func (c *Client) newOwner() string {
	var random [16]byte
	_, _ = rand.Read(random[:])
	var buf [64]byte // the client's ID is 16 hex digits: the owner fits
	owner := append(append(buf[:0], c.id...), ':')
	return string(hex.AppendEncode(owner, random[:]))
}
