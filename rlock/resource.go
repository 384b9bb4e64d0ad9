package rlock

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/reentrant"
)

// resource is the seam between the client's side of the protocol (an
// attempt, its waiter loop, a hold and the watchdog's batch) and the
// resource held in Redis: what its scripts are, and how a hold on it is
// told from the holds on every other resource. The plain lock (plainLock),
// the read-write lock's modes and the semaphore's permits (sharedMode) plug
// in here (see "Where the RW lock and the semaphore plug in" in doc.go).
// Every method but id, name, waiter, aliveTTL and subscribe is one script
// call. Two formats implement it: baton's own (plainLock) and Redisson's
// (wireLock, wire.go).
type resource interface {
	// id tells this resource mode from every other in a Client: the
	// holds table and a ctx's handles are keyed by it.
	id() resourceID
	// name is the name the user gave, for errors and events.
	name() string
	// claims reports whether grant g grants a hold on this resource mode.
	claims(g reentrant.Grant) bool
	// waiter makes the waiter id of client: its grant channel, and its
	// liveness key where the namespace judges liveness by key.
	waiter(id, client string) reentrant.Waiter
	// aliveTTL is how long a look keeps its waiter's liveness key, or
	// zero where liveness is judged by the receiver count.
	aliveTTL() time.Duration
	// subscribe makes a call of c that may wait a waiter, subscribed
	// where its wake-ups come, and returns once Redis has confirmed the
	// subscription. Unless always is set, it does so only where that
	// costs no round trip, and returns nil otherwise.
	subscribe(ctx context.Context, c *Client, always bool) (*subscribed, error)
	// acquire runs the acquire script once, as call says: it takes a
	// free resource, re-enters a hold, queues a waiter, or looks for the
	// waiter's grant.
	acquire(ctx context.Context, call acquireCall) (reentrant.AcquireResult, error)
	// release gives back one count of owner's hold of ID id (its token,
	// for a lock); the release of the last count grants the resource to
	// the oldest live waiter. A resend with the same requestID replays the
	// first result.
	release(ctx context.Context, owner string, id uint64, requestID string) (reentrant.ReleaseResult, error)
	// leave takes waiter w, queued for owner and lease, out of the queue,
	// and passes on a grant it was handed meanwhile.
	leave(ctx context.Context, w reentrant.Waiter, owner string, lease time.Duration, newOwner bool) error
	// renew makes sure owner's hold of ID id has at least lease left, and
	// reports whether owner still held it.
	renew(ctx context.Context, owner string, id uint64, lease time.Duration) (bool, error)
	// settle ends the replay of acquire requestID, made pending (see
	// acquireCall.pending): no resend or undo of it will come. It sends
	// nothing on the caller's time.
	settle(requestID string)
}

// batonResource is a resource in baton's own format, whose holds the
// watchdog renews in one pipeline per round, one script call per slot,
// whatever the resource.
type batonResource interface {
	resource
	// holdRef names owner's hold of ID id for the watchdog's batch.
	holdRef(owner string, id uint64) reentrant.HoldRef
	// handBack gives back hold g, granted by a message to waiter g.to of
	// owner, queued with lease, which no call will take.
	handBack(ctx context.Context, owner string, g holdGrant, lease time.Duration, newOwner bool) error
}

// resourceID tells resources apart within a Client: the Redis key that
// holds the resource, and which mode of it a hold is in. So a hold in one
// mode is never found, or re-entered, as a hold in another. A semaphore has
// one mode, whatever the count of permits asked for.
type resourceID struct {
	key  string         // the resource's key in Redis (for a lock, its hash)
	mode reentrant.Mode // "" for the plain lock
}

// grantResource is the resource mode grant g is of, or says why there is
// none (ErrInvalidName).
func (c *Client) grantResource(g reentrant.Grant) (batonResource, error) {
	if g.Kind == "" {
		return c.plainLock(g.Lock) // grants are baton's own format: wire mode has none
	}
	k, err := c.sharedKeys(g.Kind, g.Lock)
	if err != nil {
		return nil, err
	}
	f, err := c.sharedMode(k.ModeOf(g))
	if err != nil {
		return nil, err
	}
	return f, nil
}

// acquireCall is one run of a resource's acquire script.
type acquireCall struct {
	owner string
	// newOwner says owner was made for this call: any hold it has is the
	// call's own, so a resend needs no request ID to be told apart.
	newOwner  bool
	requestID string // for a replay of a resent call; unused with newOwner
	lease     time.Duration
	hold      uint64           // not 0: re-enter only the hold of this ID
	reentry   bool             // a re-entry through a handle (where holds have no token)
	waiter    reentrant.Waiter // with an ID: queue as it, or look for its grant
	// pending: the call may yet be undone by a replay under requestID
	// after its reply is in (a re-entry awaiting its acknowledgement), so
	// what replays it must last until settle, not only until the reply.
	pending bool
}

// plainLock is the plain reentrant lock: a hash of owner → hold count
// under its name, and reentrant.Keys's scripts.
type plainLock struct {
	batonScripts
	keys reentrant.Keys
}

// lockResource is the lock called name, in the client's format, or says
// why it cannot be (ErrInvalidName). It sends nothing. lease is the lease
// its calls ask for, which a Redisson partial unlock leaves.
func (c *Client) lockResource(name string, lease time.Duration) (resource, error) {
	switch {
	case c.wire != nil:
		return c.wire.lock(c, name, lease)
	case c.quorum != nil:
		return c.quorum.lock(c, name)
	}
	return c.plainLock(name)
}

// plainLock is the lock called name in baton's own format.
func (c *Client) plainLock(name string) (*plainLock, error) {
	k, err := c.ns.Keys(name)
	if err != nil {
		return nil, lower(err)
	}
	return &plainLock{batonScripts: batonScripts{scripts: k, rdb: c.rdb}, keys: k}, nil
}

func (p *plainLock) id() resourceID { return resourceID{key: p.keys.Hash} }

func (p *plainLock) name() string { return p.keys.Name }

func (p *plainLock) claims(g reentrant.Grant) bool { return g.Kind == "" && g.Lock == p.keys.Name }

func (p *plainLock) waiter(id, client string) reentrant.Waiter { return p.keys.Waiter(id, client) }

func (p *plainLock) aliveTTL() time.Duration { return p.keys.AliveTTL() }

func (p *plainLock) subscribe(ctx context.Context, c *Client, always bool) (*subscribed, error) {
	return subscribeForGrants(ctx, c, p, always)
}

// subscribeForGrants makes a waiter of res, subscribed on the client's
// grant line, where the grant messages of baton's own format come: with no
// round trip once the line is kept (see resource.subscribe).
func subscribeForGrants(ctx context.Context, c *Client, res resource, always bool) (*subscribed, error) {
	if !always && !c.grants.ready() {
		return nil, nil
	}
	w := res.waiter(randomHex(8), c.id)
	sub, err := c.grants.subscribe(ctx, c.hub, w)
	if err != nil {
		return nil, err
	}
	return &subscribed{w: w, sub: sub, grants: true, look: true}, nil
}

// scriptSet is the script calls of a resource in baton's own format, the
// same for every kind: reentrant.Keys (a plain lock) and reentrant.SharedMode (a
// mode of a shared resource) have them.
type scriptSet interface {
	Acquire(ctx context.Context, rdb redis.Scripter, owner, requestID string, lease time.Duration, token uint64, w reentrant.Waiter) (reentrant.AcquireResult, error)
	AcquireNew(ctx context.Context, rdb redis.Scripter, owner string, lease time.Duration, w reentrant.Waiter) (reentrant.AcquireResult, error)
	Release(ctx context.Context, rdb redis.Scripter, owner string, token uint64, requestID string) (reentrant.ReleaseResult, error)
	Leave(ctx context.Context, rdb redis.Scripter, w reentrant.Waiter, owner string, lease time.Duration, newOwner bool) (bool, error)
	Renew(ctx context.Context, rdb redis.Scripter, owner string, token uint64, lease time.Duration) (bool, error)
}

// batonScripts are the script calls of the resource interface (acquire,
// release, leave, renew) for a resource in baton's own format, written
// once for every kind: plainLock and sharedMode embed them.
type batonScripts struct {
	scripts scriptSet
	rdb     redis.Scripter
}

func (b batonScripts) acquire(ctx context.Context, call acquireCall) (reentrant.AcquireResult, error) {
	if call.newOwner {
		return b.scripts.AcquireNew(ctx, b.rdb, call.owner, call.lease, call.waiter)
	}
	return b.scripts.Acquire(ctx, b.rdb, call.owner, call.requestID, call.lease, call.hold, call.waiter)
}

// settle has nothing to end: baton's request key keeps a request's result
// for its own TTL (RequestTTL), whether or not a replay comes.
func (b batonScripts) settle(string) {}

func (b batonScripts) release(ctx context.Context, owner string, id uint64, requestID string) (reentrant.ReleaseResult, error) {
	return b.scripts.Release(ctx, b.rdb, owner, id, requestID)
}

func (b batonScripts) leave(ctx context.Context, w reentrant.Waiter, owner string, lease time.Duration, newOwner bool) error {
	_, err := b.scripts.Leave(ctx, b.rdb, w, owner, lease, newOwner)
	return err
}

func (b batonScripts) renew(ctx context.Context, owner string, id uint64, lease time.Duration) (bool, error) {
	return b.scripts.Renew(ctx, b.rdb, owner, id, lease)
}

func (p *plainLock) holdRef(owner string, id uint64) reentrant.HoldRef {
	return reentrant.HoldRef{Keys: p.keys, Owner: owner, Token: id}
}

// handBack leaves g's waiter: its leave gives back the count the message
// granted it while the grant still names it (a lock's granted key, a
// shared resource's hold), and no other call's; a look that claimed
// the grant has unnamed it, and its caller gives the count back by
// release. So the two paths never both give back. It is harmless to
// repeat, with no request ID.
func (b batonScripts) handBack(ctx context.Context, owner string, g holdGrant, lease time.Duration, newOwner bool) error {
	return b.leave(ctx, g.to, owner, lease, newOwner)
}
