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
// on resource mode res with ctx, the innermost handle from this Client of
// res's resource (either mode of an RW lock) that ctx carries decides, if
// any; the handles further out are not looked at:
//   - a handle of res: the call re-enters through it (callOwner.via); one
//     that has finished is refused (ErrNotHeld, see hold.takeTurn);
//   - for an RW lock's read, a write handle: a read inside the write, as
//     its owner;
//   - for an RW lock's write, a read handle: ErrUpgrade;
//   - a handle of the other mode that has finished: refused, with its end.
// A ctx with none acts as WithOwner's owner, a given owner: one the caller
// chose, for calls and processes to act as one; else as one made for the
// call (Client.newOwner), which no other call shares.
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
	// underRead, for an RW lock's write, is the RW lock's read mode: a
	// read handle of it in ctx is ErrUpgrade.
	underRead *sharedMode
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

// ownerOf is the owner of a call on res with ctx under rule, or the error
// that refuses the call: ErrInvalidOption for a WithOwner the rule
// refuses, ErrUpgrade, or ErrNotObtained for a finished handle.
func (c *Client) ownerOf(ctx context.Context, res resource, rule ownerRule) (callOwner, error) {
	if rule.ownOnly {
		if _, ok := OwnerFrom(ctx); ok {
			return callOwner{}, fmt.Errorf("%w: WithOwner for semaphore %q: permits are not re-entered, each Acquire is its own owner", ErrInvalidOption, res.name())
		}
		return callOwner{owner: c.newOwner(), newOwner: true}, nil
	}
	if in := c.handleIn(ctx, res.id().key); in != nil {
		return c.ownerFromHandle(in, res, rule)
	}
	if owner, ok := OwnerFrom(ctx); ok {
		return callOwner{owner: owner}, nil
	}
	return callOwner{owner: c.newOwner(), newOwner: true}, nil
}

// ownerFromHandle is the owner of a call on res whose ctx's innermost
// handle of res's resource is in (see the policy above).
func (c *Client) ownerFromHandle(in *handle, res resource, rule ownerRule) (callOwner, error) {
	mode := in.hold.res.id().mode
	if mode == res.id().mode {
		return callOwner{owner: in.hold.owner, via: in}, nil
	}
	if err := in.hold.handles.checkReentry(in); err != nil {
		return callOwner{}, fmt.Errorf("%w: %q: the innermost handle in ctx, a %s, has ended: %w", ErrNotObtained, res.name(), mode, err)
	}
	if rule.underRead != nil && mode == rule.underRead.id().mode {
		return callOwner{}, fmt.Errorf("%w: %q", ErrUpgrade, res.name())
	}
	// Only an RW lock has two modes, and a read's rule names the write.
	return callOwner{owner: in.hold.owner}, nil
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
