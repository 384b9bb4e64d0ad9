package rlock

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/reentrant"
)

// WithRedissonWire makes the client read and write Redisson's RLock format
// (Redisson 4.7.0) for every lock it takes, instead of baton's own, so that
// Go and Java services exclude each other on the same locks. clientID is
// what Redisson calls the instance's UUID: a hold's field in the lock's
// hash is "<clientID>:<owner>". Empty means a random UUID; it must not
// contain ':' (ErrInvalidOption). See "Sharing locks with Java Redisson"
// in the README.
//
// In this mode a lock called name is the hash prefix+name (prefix only if
// WithKeyPrefix is given: no default prefix), which is what a Java client
// whose NameMapper adds the same prefix uses; its channel and unlock
// latches derive from that raw name, as Java's do. Owners are as in
// baton's format: WithOwner's (to share a hold with a Java thread, give
// its thread ID and the Java instance's UUID as clientID), else one per
// hold. Waiters are woken by Redisson's unlock messages and try again;
// within a process only the first waiter of a lock tries. Holds have no
// fencing token: Token returns 0 (see Lock.Token). The watchdog renews
// with Redisson's renewal script; the default lease, 30 s, is Java's. A
// lock's expiry in Redis only moves later: a re-entry, a partial unlock or
// a renewal with a shorter lease keeps the longer one, where Redisson's
// own scripts would shorten it under a hold that counts on it.
//
// A hold in this format is its field, with no token, so a release acts on
// whatever hold the owner's field has when it arrives. A handle whose hold
// has ended (its lease ran out, or it was lost) therefore sends no release
// (its Unlock returns the end cause): with WithOwner, the same owner may
// hold the lock again by then. Two cases stay beyond a client's knowledge:
// a release sent while the hold was valid, delayed on the network past
// the lock's expiry and past the same owner's next acquire, still ends
// that next hold; and clients (Go or Java) given the same clientID and
// owner are one holder to Redis, whose releases count down one another's
// holds.
func WithRedissonWire(clientID string) Option {
	return func(c *config) {
		c.wire = true
		c.wireClientID = clientID
	}
}

// wireMode is a Client's state in Redisson's format.
type wireMode struct {
	ns       reentrant.RedissonNamespace
	clientID string
	prefix   string // WithKeyPrefix's, as a Java NameMapper would add it
	cluster  bool   // renewals are grouped by slot
	lines    wakeLines
}

// newWireMode checks cfg's wire settings. sharded says unlocks are
// published with SPUBLISH, as Redisson does on a cluster.
func newWireMode(cfg config, cluster, sharded bool) (*wireMode, error) {
	id := cfg.wireClientID
	if id == "" {
		id = newUUID()
	}
	if _, err := reentrant.NewRedissonField(id, "probe"); err != nil {
		return nil, fmt.Errorf("%w: WithRedissonWire: %w", ErrInvalidOption, err)
	}
	return &wireMode{ns: reentrant.RedissonNamespace{Sharded: sharded}, clientID: id,
		prefix: cfg.prefix, cluster: cluster}, nil
}

// newUUID is a random (version 4) UUID, as Redisson names its instances.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// lock is the lock called name in Redisson's format, whose calls ask for
// lease.
func (m *wireMode) lock(c *Client, name string, lease time.Duration) (*wireLock, error) {
	k, err := m.ns.Keys(m.prefix + name)
	if err != nil {
		return nil, lower(err)
	}
	return &wireLock{keys: k, userName: name, clientID: m.clientID, rdb: c.rdb, lease: lease,
		background: &c.background}, nil
}

// wireLock is a lock in Redisson's RLock format: a hash of
// "<clientID>:<owner>" → hold count, and unlock messages on its channel.
// Holds have no token: every token is 0.
type wireLock struct {
	keys     reentrant.RedissonKeys
	userName string
	clientID string
	rdb      redis.UniversalClient
	// lease is what Redisson calls internalLockLeaseTime: the lease a
	// partial unlock leaves.
	lease time.Duration
	// background deletes request latches, after the call's reply.
	background *cleanups
}

func (w *wireLock) id() resourceID { return resourceID{key: w.keys.Hash} }

func (w *wireLock) name() string { return w.userName }

// waiter has no ID: Redisson's waiters are not queued in Redis.
func (w *wireLock) waiter(_, _ string) reentrant.Waiter {
	return reentrant.Waiter{Channel: w.keys.Channel}
}

func (w *wireLock) aliveTTL() time.Duration { return 0 }

// claims nothing: Redisson grants nothing, its messages are wake-ups (see
// subscribe), and the wait loop reads none of them as a grant.
func (w *wireLock) claims(reentrant.Grant) bool { return false }

// subscribe puts the call in the client's local line for the lock, on
// the lock's channel. Only where the line already exists is that free of
// a round trip, and a call that would join one waits behind it anyway:
// unless always, it returns nil, and the call's first acquire goes out
// alone, as Java's does.
func (w *wireLock) subscribe(ctx context.Context, c *Client, always bool) (*subscribed, error) {
	if !always {
		return nil, nil
	}
	t, head, err := c.wire.lines.join(ctx, c.hub, w.keys.Hash, w.keys.Channel)
	if err != nil {
		return nil, err
	}
	return &subscribed{w: w.waiter("", ""), sub: t, look: head}, nil
}

// field is owner's field in the lock's hash.
func (w *wireLock) field(owner string) (reentrant.RedissonField, error) {
	f, err := reentrant.NewRedissonField(w.clientID, owner)
	if err != nil {
		return f, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	return f, nil
}

// acquire takes the lock as Redisson's acquire does. A new owner's
// acquire is AcquireFresh, which a resend cannot count twice. Any other
// (a first acquire under WithOwner, whose field may hold the lock already
// through another client or a Java thread sharing it, or a re-entry) runs
// under its request ID's latch, so that a resend, or the undo of a call
// given up, replays the first run instead of counting again; the latch's
// DEL goes out in the background once the reply is in, or, for a pending
// call, once it is settled. A re-entry through
// a handle never takes a lock its hold has lost (HoldGone).
func (w *wireLock) acquire(ctx context.Context, call acquireCall) (reentrant.AcquireResult, error) {
	f, err := w.field(call.owner)
	if err != nil {
		return reentrant.AcquireResult{}, err
	}
	var r reentrant.RedissonAcquireResult
	switch {
	case call.newOwner:
		r, err = w.keys.AcquireFresh(ctx, w.rdb, f, call.lease)
	case call.reentry:
		r, err = w.keys.Reenter(ctx, w.rdb, f, call.requestID, call.lease)
	default:
		r, err = w.keys.Acquire(ctx, w.rdb, f, call.requestID, call.lease)
	}
	if err == nil && call.requestID != "" && !call.pending {
		w.dropLatch(call.requestID)
	}
	return reentrant.AcquireResult{Acquired: r.Acquired, HolderTTL: r.HolderTTL, HoldGone: r.HoldGone}, err
}

// settle drops the latch of pending acquire requestID (see dropLatch);
// there is none without a request ID.
func (w *wireLock) settle(requestID string) {
	if requestID != "" {
		w.dropLatch(requestID)
	}
}

// dropLatch deletes requestID's latch in the background, once the call's
// reply is in, as Java sends that DEL without waiting for it; never
// before, or a resend would run again.
func (w *wireLock) dropLatch(requestID string) {
	w.background.run(w.keys.LatchTTL(), func(ctx context.Context) { _ = w.keys.DropLatch(ctx, w.rdb, requestID) })
}

// release is Redisson's unlock under requestID, whose latch makes a
// resend replay it. The hold count left is not reported (Remaining 0).
// Once the reply is in, the latch's DEL goes out in the background
// (dropLatch): a Lock and Unlock take two round trips, as Java's do.
// Until the reply, a retry under requestID replays it.
func (w *wireLock) release(ctx context.Context, owner string, _ uint64, requestID string) (reentrant.ReleaseResult, error) {
	f, err := w.field(owner)
	if err != nil {
		return reentrant.ReleaseResult{}, err
	}
	st, err := w.keys.Unlock(ctx, w.rdb, f, requestID, w.lease)
	if err == nil {
		w.dropLatch(requestID)
	}
	return reentrant.ReleaseResult{Status: st}, err
}

// blindRelease is a resource whose release cannot tell one hold of an
// owner from the next, having no token: it acts on whatever hold the
// owner's field has when it arrives.
type blindRelease interface{ releasesBlind() }

// releasesBlind: a hold in Redisson's format is its field, and the field
// is the owner's, whichever hold of the owner it is.
func (w *wireLock) releasesBlind() {}

// releasesBlind reports whether res's release is blind. A handle whose
// hold has ended sends such a release never: the same owner may hold the
// lock again by then (a WithOwner owner, once the lease ran out), and the
// release would end that hold. A hold that ended while Redis still kept it
// (its renewal failed) then stays in Redis until its lease ends.
func releasesBlind(res resource) bool {
	_, ok := res.(blindRelease)
	return ok
}

// leave has nothing to do: a Redisson waiter is not in Redis.
func (w *wireLock) leave(context.Context, reentrant.Waiter, string, time.Duration, bool) error {
	return nil
}

func (w *wireLock) renew(ctx context.Context, owner string, _ uint64, lease time.Duration) (bool, error) {
	f, err := w.field(owner)
	if err != nil {
		return false, err
	}
	return w.keys.Renew(ctx, w.rdb, f, lease)
}

// renew is renewFor in Redisson's format: the holds grouped by
// cluster slot on a cluster (all in one group on a single node, as
// Redisson's watchdog does), one RedissonRenewBatch per group (see
// renewGroups).
func (m *wireMode) renew(ctx context.Context, c *Client, batch []*hold, lease time.Duration) []error {
	errs := make([]error, len(batch))
	for _, idx := range renewGroups(batch, m.cluster) {
		m.renewGroup(ctx, c, batch, idx, lease, errs)
	}
	return errs
}

// renewGroup renews batch[i] for each i in idx in one script call, for
// lease, and records each one's outcome in errs.
func (m *wireMode) renewGroup(ctx context.Context, c *Client, batch []*hold, idx []int, lease time.Duration, errs []error) {
	holds := make([]reentrant.RedissonHold, len(idx))
	for j, i := range idx {
		w := batch[i].res.(*wireLock)
		f, err := w.field(batch[i].owner) // it took the lock: never fails
		if err != nil {
			recordRenewals(batch, idx, nil, err, errs)
			return
		}
		holds[j] = reentrant.RedissonHold{Keys: w.keys, Field: f}
	}
	renewed, err := reentrant.RedissonRenewBatch(ctx, c.rdb, holds, lease)
	recordRenewals(batch, idx, renewed, err, errs)
}

// forceUnlockWire is ForceUnlock in Redisson's format. Holds have no
// token to tell a hold taken after the delete from one it deleted: every
// hold of the lock this client has is cut off, which at worst reports a
// hold taken in that instant as lost.
func (c *Client) forceUnlockWire(ctx context.Context, name string) (int64, error) {
	w, err := c.wire.lock(c, name, c.cfg.watchdogLease)
	if err != nil {
		return 0, err
	}
	deleted, err := w.keys.ForceUnlock(ctx, c.rdb)
	if err != nil || !deleted {
		return 0, err
	}
	id := w.id()
	for _, h := range c.table.holdsOf(func(h *hold) bool { return h.res.id() == id }) {
		h.cutOff(h.lost("force-released"))
	}
	return 1, nil
}

// inspectWire is Inspect in Redisson's format: the hash's fields and
// counts, and its PTTL.
func (c *Client) inspectWire(ctx context.Context, name string) (State, error) {
	w, err := c.wire.lock(c, name, c.cfg.watchdogLease)
	if err != nil {
		return State{}, err
	}
	var all *redis.MapStringStringCmd
	var pttl *redis.DurationCmd
	_, err = c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		all = p.HGetAll(ctx, w.keys.Hash)
		pttl = p.PTTL(ctx, w.keys.Hash)
		return nil
	})
	if err != nil {
		return State{}, err
	}
	st := State{Holders: map[string]int64{}, TTL: pttl.Val()}
	for f, n := range all.Val() {
		var count int64
		_, _ = fmt.Sscan(n, &count)
		st.Holders[f] = count
	}
	return st, nil
}

// ErrWireUnsupported: the call needs a format WithRedissonWire does not
// cover. Client.RWLock's calls return it on a wire-mode client, having
// written nothing: Redisson's read-write lock format is not implemented,
// and a read-write lock in baton's format would not exclude a Java
// RReadWriteLock of the same name.
var ErrWireUnsupported = errors.New("rlock: not available in Redisson wire mode")
