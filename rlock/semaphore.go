package rlock

import (
	"context"
	"fmt"
	"time"

	"github.com/batonlock/baton/reentrant"
)

// Semaphore is a named counting semaphore: its permits, size in all, are
// held by owners that take some at a time. It is a resource of its own,
// distinct from the plain lock and the RW lock of the same name.
//
// Its permits are owned and leased like a lock's holds: each Acquire is an
// owner of its own, its Permit's lease is renewed by the watchdog (or fixed,
// WithLease), by Redis's clock, and only that Permit's Release gives them
// back; a holder that dies returns its permits when its lease runs out.
// Permits are counted, not re-entered: an Acquire whose ctx carries a
// Permit's Context takes permits of its own, and WithOwner is refused
// (ErrInvalidOption), since an owner holds at most one count of permits.
//
// Waiters queue in one strict FIFO queue in Redis: a release admits the run
// of consecutive waiters at the head that fit, and nobody is admitted past
// a head that does not (a head asking 3 blocks later asks for 1, even when
// 1 is free: head-of-line blocking, the price of never starving a large
// ask). Neither Acquire nor TryAcquire takes permits while anyone queues.
//
// The size lives in Redis: the first call that finds none stored stores
// the size this handle was made with, and SetSize changes it. A handle made
// with another size uses the stored one: an ask above the stored size is
// refused with ErrInvalidOption, writing nothing. The stored size lasts as
// long as the semaphore is in use: it expires two leases after the last
// hold's or waiter's acquire, renewal or look (or after SetSize, if later),
// never while a permit is held or a waiter queues. An idle semaphore is
// then new, and the next call stores its handle's size.
//
// A Semaphore sends nothing until a call; it is safe for concurrent use.
type Semaphore struct {
	c    *Client
	keys reentrant.SharedKeys // with the handle's size (SizeGiven)
	err  error                // why the name or size cannot be a semaphore's
}

// Semaphore is the semaphore called name (name rules as for Lock), of size
// permits when Redis stores none yet. It sends nothing; an invalid name
// (ErrInvalidName) or a size below 1 (ErrInvalidOption) is reported by each
// call. On a wire-mode client (WithRedissonWire) each call returns
// ErrWireUnsupported, and on a quorum's (NewQuorum) ErrQuorumUnsupported.
func (c *Client) Semaphore(name string, size int64) *Semaphore {
	s := &Semaphore{c: c}
	switch {
	case c.wire != nil:
		s.err = fmt.Errorf("%w: Semaphore %q", ErrWireUnsupported, name)
		return s
	case c.quorum != nil:
		s.err = fmt.Errorf("%w: Semaphore %q", ErrQuorumUnsupported, name)
		return s
	}
	k, err := c.sharedKeys(reentrant.KindSemaphore, name)
	if err == nil {
		k, err = k.WithSize(size)
	}
	s.keys, s.err = k, lower(err)
	return s
}

// Permit is a handle of permits of a Semaphore, returned by Acquire and
// TryAcquire, to be released once. It is a handle as a Lock is, with the
// same Context, validity, renewal and loss; its hold is its own (no other
// call shares its owner). It is safe for concurrent use.
type Permit handle

// Acquire takes n permits, waiting as long as ctx allows (or WaitAtMost,
// if given) while they do not fit or others queue before it. Its options
// are Lock's: WithLease for a fixed lease, the watchdog's renewal
// otherwise; WaitAtMost. Errors are Lock's, and ErrInvalidOption for n
// below 1 or above the handle's size (before any Redis call) or above the
// size stored in Redis (matching reentrant.ErrInvalidPermits too; nothing
// is written), or for a ctx with WithOwner. A waiter whose n a SetSize
// lowered below gets that ErrInvalidOption too, at its next look.
func (s *Semaphore) Acquire(ctx context.Context, n int64, opts ...LockOption) (*Permit, error) {
	return s.obtain(ctx, n, opts, true)
}

// TryAcquire is Acquire that returns ErrNotObtained instead of waiting, or
// waits up to d with WaitAtMost(d). It never takes permits while anyone
// queues.
func (s *Semaphore) TryAcquire(ctx context.Context, n int64, opts ...LockOption) (*Permit, error) {
	return s.obtain(ctx, n, opts, false)
}

// obtain is Acquire (blocking) and TryAcquire: an attempt, as for a lock,
// in the mode of n permits, always under an owner of its own.
func (s *Semaphore) obtain(ctx context.Context, n int64, opts []LockOption, blocking bool) (*Permit, error) {
	a, err := s.c.prepare(ctx, opts, ownerRule{ownOnly: true}, func(time.Duration) (resource, error) { return s.permits(n) })
	if err != nil {
		return nil, err
	}
	l, err := s.c.observed(a.run(blocking))
	return (*Permit)(l), lower(err)
}

// permits is the mode of n permits, or why a call for them is refused before
// any Redis call.
func (s *Semaphore) permits(n int64) (resource, error) {
	switch {
	case s.err != nil:
		return nil, s.err
	case n < 1 || n > s.keys.SizeGiven():
		return nil, fmt.Errorf("%w: %d permits of semaphore %q, the range is 1 to %d", ErrInvalidOption, n, s.keys.Name, s.keys.SizeGiven())
	}
	f, err := s.c.sharedMode(s.keys.Permits(n)) // lowers err
	if err != nil {
		return nil, err
	}
	return f, nil
}

// SetSize sets the semaphore's size in Redis, for every client, to n: a
// larger size grants waiters that now fit before it returns; a smaller one
// takes no permit back, and admits nobody until the permits held are below
// it. n must be 1 to reentrant.MaxSize (ErrInvalidOption otherwise). The
// handle's own size, which bounds its asks, is unchanged.
//
// n is kept for two of the client's watchdog leases (WithWatchdogLease;
// 60 s by default) from SetSize, and for as long as the semaphore is in use
// after that (see Semaphore): every permit and waiter keeps it, so it
// never expires under a permit held. A semaphore left idle past that
// forgets it, as a Redis that lost its data would: the next call stores
// its handle's size. To resize for good, make every handle with the new
// size too, or call SetSize when the semaphore is used again.
//
// Where acknowledgements are on (WithReplicaAcks), the size counts only
// once replicas acknowledged it, as a grant does. An error matching
// ErrNotReplicated means the master stored n but no replica acknowledged
// it in time: a failover may keep n or lose it, so call SetSize again.
func (s *Semaphore) SetSize(ctx context.Context, n int64) error {
	if err := s.c.checkOpen(); err != nil {
		return err
	}
	if s.err != nil {
		return s.err
	}
	if err := lower(s.keys.SetSize(ctx, s.c.rdb, n, s.c.cfg.watchdogLease)); err != nil {
		return err
	}
	return s.c.acks.replicated(ctx, s.keys.Hash)
}

// ForceRelease ends every hold of the semaphore's permits, whoever holds
// them, and grants what then fits of its queue. It reports how many holds
// it ended. This Client's Permits it ended are lost: their Contexts end
// with ErrLockLost. Holders elsewhere find out at their next renewal or
// Release. The size stays.
func (s *Semaphore) ForceRelease(ctx context.Context) (int64, error) {
	if s.err != nil {
		return 0, s.err
	}
	return s.c.forceReleaseShared(ctx, s.keys)
}

// SemaphoreState is a snapshot of a semaphore, as Semaphore.Inspect reads
// it.
type SemaphoreState struct {
	// Size is the size stored in Redis, 0 when none is yet.
	Size int64
	// Held is the number of permits held.
	Held int64
	// Holders maps the owner of each hold of permits to it.
	Holders map[string]PermitState
	// LastToken is the last grant's token; 0 once Redis has let the
	// counter expire, two leases past the token's time.
	LastToken uint64
	// Queued is the number of waiters in the queue, dead ones included.
	Queued int64
}

// PermitState is one owner's hold of permits, as Inspect reads it.
type PermitState struct {
	Count int64         // the permits it holds
	Token uint64        // its fencing token
	TTL   time.Duration // how long its lease has left, by the server clock
}

// Inspect reads the semaphore's size, its holds of permits, their leases,
// its last token and the length of its queue, without changing it;
// ErrClosed after Client.Close.
func (s *Semaphore) Inspect(ctx context.Context) (SemaphoreState, error) {
	if err := s.c.checkOpen(); err != nil {
		return SemaphoreState{}, err
	}
	if s.err != nil {
		return SemaphoreState{}, s.err
	}
	st, err := s.keys.Inspect(ctx, s.c.rdb)
	if err != nil {
		return SemaphoreState{}, err
	}
	out := SemaphoreState{Size: st.Size, Held: st.Used, Holders: map[string]PermitState{}, LastToken: st.LastToken,
		Queued: st.Queued}
	for _, h := range st.Holds {
		out.Holders[h.Owner] = PermitState{Count: h.Weight, Token: h.Token, TTL: h.TTL}
	}
	return out, nil
}

// Name is the semaphore's name.
func (p *Permit) Name() string { return (*Lock)(p).Name() }

// Owner is the owner ID the permits are held under: made for the Acquire
// that took them.
func (p *Permit) Owner() string { return (*Lock)(p).Owner() }

// Token is the fencing token of this grant: higher than that of every
// earlier grant of the semaphore.
func (p *Permit) Token() uint64 { return (*Lock)(p).Token() }

// Count is the number of permits this handle holds.
func (p *Permit) Count() int64 { return p.hold.res.(*sharedMode).mode.Weight() }

// Context carries this Permit (PermitFromContext finds it) and the values
// of the ctx given to Acquire, and ends only with the Permit, with
// context.Cause saying why, as a Lock's Context does: when the permits are
// released (context.Canceled), or when they are lost (a cause matching
// ErrLockLost: the lease ran out unrenewed, Redis no longer holds them,
// ForceRelease ended them, or a fixed lease ran out). The end of the ctx
// given to Acquire bounds the wait only. An Acquire with it takes permits
// of its own.
func (p *Permit) Context() context.Context { return (*Lock)(p).Context() }

// Release gives the permits back, and Redis grants what then fits of the
// queue in the same script. It sends the release even when ctx has ended,
// and returns as Lock.Unlock does: nil once confirmed; ErrLockLost if the
// permits were lost while held; ErrNotHeld if this Permit was released
// before; ErrClosed after Client.Close. A transport error leaves it
// releasing: calling Release again replays the first attempt.
func (p *Permit) Release(ctx context.Context) error { return (*handle)(p).unlock(ctx) }
