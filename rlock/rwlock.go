package rlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonlock/baton/reentrant"
)

// ErrUpgrade: rw.Lock or rw.TryLock was called with a ctx that carries a
// read handle of the same RWLock and no write handle (or by an owner that
// holds only a read of it in this Client). Waiting would wait for the
// caller's own read, forever; the call returns at once, having written
// nothing. Unlock the read first, or take the write before the read.
var ErrUpgrade = errors.New("rlock: write asked for under a read of the same RW lock")

// RWLock is a named read-write lock: many owners may hold its read at once,
// one owner its write, alone. It is a resource of its own, distinct from
// the plain lock of the same name. Its waiters queue in one FIFO queue in
// Redis, reads and writes alike: a read behind a queued write waits for it
// (writers are not starved), and a release admits the run of consecutive
// reads at the queue's head together (phase-fair). Its handles, reads and
// write alike, are Locks (FromContext finds them), with the plain lock's
// Context, validity, renewal, loss and Unlock.
//
// Re-entry goes by the handles a ctx carries, as for the plain lock: a
// read inside a read and a write inside a write re-enter; a read inside a
// write (rw.RLock(w.Context())) is granted at once, past the queue, with
// the write's token, and stays after the write's Unlock, with its Context:
// a downgrade, with no writer in between. A write inside a read only is
// ErrUpgrade.
//
// An RWLock sends nothing until a call; it is safe for concurrent use.
type RWLock struct {
	c           *Client
	read, write *sharedMode // nil when err is set
	err         error       // why the name cannot be an RW lock's
}

// RWLock is the read-write lock called name (name rules as for Lock). It
// sends nothing; an invalid name is reported by each call. On a wire-mode
// client (WithRedissonWire) each call returns ErrWireUnsupported, and on a
// quorum's (NewQuorum) ErrQuorumUnsupported.
func (c *Client) RWLock(name string) *RWLock {
	rw := &RWLock{c: c}
	switch {
	case c.wire != nil:
		rw.err = fmt.Errorf("%w: RWLock %q", ErrWireUnsupported, name)
		return rw
	case c.quorum != nil:
		rw.err = fmt.Errorf("%w: RWLock %q", ErrQuorumUnsupported, name)
		return rw
	}
	k, err := c.sharedKeys(reentrant.KindRW, name)
	if rw.err = err; err == nil {
		if rw.read, rw.err = c.sharedMode(k.Read()); rw.err == nil {
			rw.write, rw.err = c.sharedMode(k.Write())
		}
	}
	return rw
}

// RLock takes a read hold, waiting as Client.Lock does (WaitAtMost
// bounds the wait) while a write holds or is queued before it. Its options
// and errors are Lock's. Its Token is the token of the last write grant
// before it, which the reads after it share; where Redis has none (never,
// or lost, or expired), a new token, above every token before it, as a
// write would take.
func (rw *RWLock) RLock(ctx context.Context, opts ...LockOption) (*Lock, error) {
	return rw.c.observed(rw.obtain(ctx, rw.read, opts, true))
}

// Lock takes the write hold, waiting as Client.Lock does while anyone
// holds the lock or queues before it. Its options and errors are Lock's,
// and ErrUpgrade. Its Token is higher than that of every earlier grant.
func (rw *RWLock) Lock(ctx context.Context, opts ...LockOption) (*Lock, error) {
	return rw.c.observed(rw.obtain(ctx, rw.write, opts, true))
}

// TryRLock is RLock that returns ErrNotObtained instead of waiting, or
// waits up to d with WaitAtMost(d).
func (rw *RWLock) TryRLock(ctx context.Context, opts ...LockOption) (*Lock, error) {
	return rw.c.observed(rw.obtain(ctx, rw.read, opts, false))
}

// TryLock is Lock that returns ErrNotObtained instead of waiting, or waits
// up to d with WaitAtMost(d).
func (rw *RWLock) TryLock(ctx context.Context, opts ...LockOption) (*Lock, error) {
	return rw.c.observed(rw.obtain(ctx, rw.write, opts, false))
}

// DoRead runs fn under a read hold, as Client.Do runs it under a lock.
func (rw *RWLock) DoRead(ctx context.Context, fn func(ctx context.Context) error, opts ...LockOption) error {
	l, err := rw.RLock(ctx, opts...)
	if err != nil {
		return err
	}
	return runHeld(ctx, l, fn)
}

// Do runs fn under the write hold, as Client.Do runs it under a lock.
func (rw *RWLock) Do(ctx context.Context, fn func(ctx context.Context) error, opts ...LockOption) error {
	l, err := rw.Lock(ctx, opts...)
	if err != nil {
		return err
	}
	return runHeld(ctx, l, fn)
}

// obtain is RLock and Lock (blocking), TryRLock and TryLock, in mode f.
// The owner (owner.go) is given by the innermost handle of this lock in
// ctx: of f, a re-entry; a write for a read, a read inside the write; a
// read for a write is ErrUpgrade. Else it is as for a plain lock, and a
// write whose owner holds only a read here is ErrUpgrade too.
func (rw *RWLock) obtain(ctx context.Context, f *sharedMode, opts []LockOption, blocking bool) (*handle, error) {
	rule := ownerRule{underRead: rw.read}
	if f == rw.read {
		rule = ownerRule{insideWrite: rw.write}
	}
	a, err := rw.c.prepare(ctx, opts, rule, func(time.Duration) (resource, error) { return f, rw.err })
	if err != nil {
		return nil, err
	}
	if a.via == nil && f == rw.write && rw.holdsOnlyRead(a.owner) {
		return nil, fmt.Errorf("%w: %q", ErrUpgrade, rw.read.name())
	}
	return a.run(blocking)
}

// holdsOnlyRead reports whether owner holds a read of rw in this Client,
// and not its write.
func (rw *RWLock) holdsOnlyRead(owner string) bool {
	t := &rw.c.table
	return t.get(holdKey{rw.read.id(), owner}) != nil && t.get(holdKey{rw.write.id(), owner}) == nil
}

// ForceUnlock ends every hold of the RW lock, whoever holds it, and grants
// what then fits of its queue. It reports how many holds it ended. This
// Client's holds it ended are lost: their Contexts end with ErrLockLost. A
// hold taken again while its reply was on its way is not one of them. Holders elsewhere find out at their
// next renewal or Unlock.
func (rw *RWLock) ForceUnlock(ctx context.Context) (int64, error) {
	if rw.err != nil {
		return 0, rw.err
	}
	return rw.c.forceReleaseShared(ctx, rw.read.mode.Keys())
}

// RWState is a snapshot of an RW lock, as RWLock.Inspect reads it.
type RWState struct {
	// Readers maps the owner of each read hold to its hold count.
	Readers map[string]int64
	// Writer is the owner of the write hold, "" when none.
	Writer string
	// WriteCount is the write hold's count, 0 when none.
	WriteCount int64
	// TTL is how long each hold's lease has left, by its owner and mode
	// ("r:<owner>", "w:<owner>").
	TTL map[string]time.Duration
	// LastToken is the last token granted: a write's, or a read's where
	// there was none (see RLock); 0 once Redis has let the counter expire,
	// two leases past the token's time.
	LastToken uint64
	// Queued is the number of waiters in the queue, dead ones included.
	Queued int64
}

// Inspect reads the RW lock's holds, their leases, its last token and the
// length of its queue, without changing it; ErrClosed after Client.Close.
func (rw *RWLock) Inspect(ctx context.Context) (RWState, error) {
	if err := rw.c.checkOpen(); err != nil {
		return RWState{}, err
	}
	if rw.err != nil {
		return RWState{}, rw.err
	}
	st, err := rw.read.mode.Keys().Inspect(ctx, rw.c.rdb)
	if err != nil {
		return RWState{}, err
	}
	out := RWState{Readers: map[string]int64{}, TTL: map[string]time.Duration{}, LastToken: st.LastToken,
		Queued: st.Queued}
	for _, h := range st.Holds {
		out.TTL[string(h.Mode)+":"+h.Owner] = h.TTL
		if h.Mode == reentrant.ModeWrite {
			out.Writer, out.WriteCount = h.Owner, h.Count
		} else {
			out.Readers[h.Owner] = h.Count
		}
	}
	return out, nil
}
