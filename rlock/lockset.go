package rlock

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/notify/slot"
)

// MaxLockSet is the most names one LockAll, TryLockAll or DoAll takes,
// once duplicates are counted once. It bounds how long one set's script
// keeps the server from other clients: a free set's acquire and release
// cost the server some µs per member (reentrant's BenchmarkSetServerTime:
// 8 ms and 4 ms for 1,000 members, measured on a loaded 2-core machine).
const MaxLockSet = 1000

// errWireSet refuses a set in Redisson's format: a set's scripts are
// baton's own.
var errWireSet = fmt.Errorf("%w: LockAll with WithRedissonWire: lock sets are in baton's own format only: %w",
	ErrInvalidOption, errors.ErrUnsupported)

// LockSet is a hold on several plain locks taken together, all or nothing,
// by LockAll or TryLockAll: one handle per member, each re-entered or
// taken under the set's owner. It is safe for concurrent use, and unlocked
// once.
type LockSet struct {
	c       *Client
	members []*handle // in the canonical order (see LockAll)
	ctx     *setContext

	unlockMu sync.Mutex   // guards the unlock: one attempt at a time, and sent
	sent     []setRelease // the releases of the first Unlock, resent by a retry
}

// LockAll takes every named lock, all or nothing, waiting as long as ctx
// allows (or WaitAtMost, if given, for the whole set). Duplicate names
// count once. Names already held through ctx (a handle's Context, as Lock
// re-enters) are re-entered through their handles; the rest are taken
// under one owner: WithOwner's, or one made for the call.
//
// The locks are taken in one canonical order: by the cluster slot of the
// name (CRC16 of the name, mod 16384: each name is its own hash tag, and
// names cannot carry '{' or '}'), then by name. The free locks at the
// start of the order are taken by one script call (one per slot on a
// cluster); at the first lock it cannot take, the call waits in that
// lock's FIFO queue like Lock, holding what it has, and goes on from there
// once granted. On a single node, a client that has waited before is
// queued by that same script: a set whose members are free costs one
// script call, and each member it waits for one more, for the rest. A set never releases and retries, so sets and single locks
// cannot deadlock or livelock, and a waiting set is ahead of every later
// call on the lock it waits for and on those it holds.
//
// A set that may wait (LockAll, TryLockAll with WaitAtMost) through a ctx
// that holds some of its names must hold the first ones in the canonical
// order: otherwise it would wait for an earlier name holding a later one,
// and could deadlock with a set doing the opposite, so it is refused with
// ErrLockOrder. Names held under a WithOwner owner outside ctx are not
// seen by this rule: such an owner must keep the order itself.
//
// Errors: ErrInvalidName for a bad name; ErrLockOrder as above;
// ErrInvalidOption for no names,
// more than MaxLockSet, a bad option, or a client WithRedissonWire (also
// matching errors.ErrUnsupported); ErrQuorumUnsupported on a quorum's
// Client (NewQuorum); ErrNotObtained also matching
// ErrLockLost for a member found lost while the set waited for a later
// one; otherwise as Lock's, naming the member.
// A call that fails holds nothing and has left every queue when it
// returns (unless Redis did not answer within 250 ms: the give-back goes
// on in the background).
func (c *Client) LockAll(ctx context.Context, names []string, opts ...LockOption) (*LockSet, error) {
	return c.lockAll(ctx, names, opts, true)
}

// TryLockAll takes every named lock as LockAll does, but returns
// ErrNotObtained, holding none of them, as soon as one is held by another
// owner. With WaitAtMost(d) it waits up to d for the whole set.
func (c *Client) TryLockAll(ctx context.Context, names []string, opts ...LockOption) (*LockSet, error) {
	return c.lockAll(ctx, names, opts, false)
}

// DoAll takes every named lock as LockAll does, runs fn with the set's
// Context, and unlocks them all, as Do does for one lock: fn's ctx also
// ends with ctx, and the error also matches ErrLockLost if a member was
// lost while fn ran.
func (c *Client) DoAll(ctx context.Context, names []string, fn func(ctx context.Context) error, opts ...LockOption) error {
	s, err := c.LockAll(ctx, names, opts...)
	if err != nil {
		return err
	}
	return runHeld(ctx, s, fn)
}

// Names are the set's lock names, once each, in the canonical order.
func (s *LockSet) Names() []string {
	names := make([]string, len(s.members))
	for i, m := range s.members {
		names[i] = m.hold.res.name()
	}
	return names
}

// Token is the fencing token of member name's hold, as Lock.Token; 0 for
// a name that is not a member.
func (s *LockSet) Token(name string) uint64 {
	if m := s.member(name); m != nil {
		return m.hold.token
	}
	return 0
}

// member is the member handle of lock name, or nil.
func (s *LockSet) member(name string) *handle {
	for _, m := range s.members {
		if m.hold.res.name() == name {
			return m
		}
	}
	return nil
}

// Context carries every member's handle and the values of the ctx given
// to LockAll: a Lock call for a member with it re-enters through that
// member's handle. It ends at the first of: the set is unlocked
// (context.Canceled); any member may be lost, with that member's cause,
// which matches ErrLockLost and names the member (see Lock.Context). With
// WithLease it has the members' deadline.
func (s *LockSet) Context() context.Context { return s.ctx }

// canonical sorts locks into the set's canonical order: by the cluster
// slot of the lock's keys, then by name. Every client orders every set
// the same way, which is what keeps sets from waiting in a circle.
func canonical(locks []*plainLock) {
	sort.Slice(locks, func(i, j int) bool {
		si, sj := slot.Of(locks[i].keys.Hash), slot.Of(locks[j].keys.Hash)
		if si != sj {
			return si < sj
		}
		return locks[i].keys.Name < locks[j].keys.Name
	})
}

// setLocks is the locks of names, once each, in the canonical order, or
// the error that refuses them, before any call to Redis.
func (c *Client) setLocks(names []string) ([]*plainLock, error) {
	switch {
	case c.wire != nil:
		return nil, errWireSet
	case c.quorum != nil:
		// A set's scripts take its members on one deployment; a quorum's
		// locks are made by the quorum's two rounds, one name at a time.
		return nil, fmt.Errorf("%w: lock sets (LockAll, TryLockAll, DoAll)", ErrQuorumUnsupported)
	case len(names) == 0:
		return nil, fmt.Errorf("%w: a lock set needs at least one name", ErrInvalidOption)
	}
	seen := make(map[string]bool, len(names))
	locks := make([]*plainLock, 0, min(len(names), MaxLockSet))
	for _, name := range names {
		if seen[name] {
			continue
		}
		if len(seen) == MaxLockSet {
			return nil, fmt.Errorf("%w: more than MaxLockSet (%d) names", ErrInvalidOption, MaxLockSet)
		}
		seen[name] = true
		p, err := c.plainLock(name)
		if err != nil {
			return nil, err
		}
		locks = append(locks, p)
	}
	canonical(locks)
	return locks, nil
}

// setGroup is members of a set that one script call may touch: on a
// cluster, a run of members in one slot; elsewhere, any members.
type setGroup struct{ from, to int }

// groupsOf cuts locks, in the canonical order, into the runs one script
// call may touch: one per slot on a cluster, and all of them elsewhere (a
// single node, Sentinel), where a script may touch any key.
func (c *Client) groupsOf(locks []*plainLock) []setGroup {
	_, cluster := c.rdb.(*redis.ClusterClient)
	var groups []setGroup
	for i := range locks {
		if i == 0 || cluster && slot.Of(locks[i].keys.Hash) != slot.Of(locks[i-1].keys.Hash) {
			groups = append(groups, setGroup{from: i})
		}
		groups[len(groups)-1].to = i + 1
	}
	return groups
}

// setContext is a LockSet's Context: it carries the members' handles
// (through the last member's Context, whose values chain through every
// member's), and ends with the first member that ends.
type setContext struct {
	context.Context // the last member's values; cancelled by the first end
	cancel          context.CancelCauseFunc
	members         []*handle
}

// newSetContext is the Context of a set of members, in the canonical
// order, the last of whose Contexts carries the others.
func newSetContext(members []*handle) *setContext {
	last := members[len(members)-1]
	inner, cancel := context.WithCancelCause(context.WithoutCancel(&last.ctx))
	c := &setContext{Context: inner, cancel: cancel, members: members}
	for _, m := range members {
		context.AfterFunc(&m.ctx, func() { c.memberEnded(m) })
	}
	return c
}

// memberEnded ends the set's Context with member m's cause, named.
func (c *setContext) memberEnded(m *handle) {
	cause := context.Cause(&m.ctx)
	var named *lockError
	if errors.Is(cause, ErrLockLost) && !(errors.As(cause, &named) && named.name == m.hold.res.name()) {
		cause = &lockError{sentinel: ErrLockLost, name: m.hold.res.name(), what: "lost", cause: cause}
	}
	c.cancel(cause)
}

// Err returns the end, after making sure that a member's end due by the
// clock has happened: Done is closed before Err returns non-nil.
func (c *setContext) Err() error {
	for _, m := range c.members {
		if m.ctx.Err() != nil {
			c.memberEnded(m)
			break
		}
	}
	return c.Context.Err()
}

// Deadline is the earliest of the members' (those taken WithLease).
func (c *setContext) Deadline() (deadline time.Time, ok bool) {
	for _, m := range c.members {
		if d, has := m.ctx.Deadline(); has && (!ok || d.Before(deadline)) {
			deadline, ok = d, true
		}
	}
	return deadline, ok
}
