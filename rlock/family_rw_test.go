package rlock

import (
	"context"
	"errors"

	"github.com/batonlock/baton/reentrant"
)

// rwTaker is RWLock.RLock, Lock, TryRLock or TryLock.
type rwTaker func(context.Context, ...LockOption) (*Lock, error)

// rwFamilyOps are the RW lock's operations: reads and writes (plain,
// cancelled while they may wait, or bounded tries), re-entries in the same
// mode, and downgrades.
func rwFamilyOps(c *Client, name string) []familyOp {
	rw := c.RWLock(name)
	return []familyOp{
		rwOnce(rw.RLock, false, rwWaits), rwOnce(rw.RLock, false, rwWaits), rwOnce(rw.Lock, true, rwWaits),
		rwNested(rw.RLock, false), rwNested(rw.Lock, true), rwDowngrade(rw),
		rwOnce(rw.RLock, false, rwCancelled), rwOnce(rw.Lock, true, rwCancelled),
		rwOnce(rw.TryRLock, false, rwBounded), rwOnce(rw.TryLock, true, rwBounded),
	}
}

// How rwOnce waits: as long as it takes, until its ctx is cancelled a
// short while on (while it waits or while it holds), or at most a short
// while (WaitAtMost).
const (
	rwWaits = iota
	rwCancelled
	rwBounded
)

// rwOnce takes one hold with take, waiting as how says, holds it a while
// and gives it up.
func rwOnce(take rwTaker, write bool, how int) familyOp {
	return func(w *familyWorker) error {
		ctx, cancel := context.WithCancel(w.stop)
		opts := w.leaseOpts()
		switch how {
		case rwCancelled:
			ctx, cancel = context.WithTimeout(w.stop, w.shortly())
		case rwBounded:
			opts = append(opts, WaitAtMost(w.shortly()))
		}
		defer cancel()
		h, err := rwTake(w, take, write, ctx, opts...)
		if h == nil {
			return err
		}
		w.hold()
		return w.release(h)
	}
}

// rwTake obtains a hold with take and tells the checker; a hold not
// obtained is nil, with an error only when that was unexpected.
func rwTake(w *familyWorker, take rwTaker, write bool, ctx context.Context, opts ...LockOption) (*familyHold, error) {
	l, err := take(ctx, opts...)
	if err != nil {
		return nil, w.obtained(err)
	}
	h := rwHold(l, write)
	return h, w.took(h)
}

// rwHold is l as the checker sees it.
func rwHold(l *Lock, write bool) *familyHold {
	mode, weight := reentrant.ModeRead, int64(1)
	if write {
		mode, weight = reentrant.ModeWrite, reentrant.WriteWeight
	}
	return &familyHold{mode: string(mode), owner: l.Owner(), weight: weight, ctx: l.Context(), release: l.Unlock}
}

// rwNested re-enters a hold in its own mode (read in read, write in
// write) through its Context, and gives up the re-entry first.
func rwNested(take rwTaker, write bool) familyOp {
	return func(w *familyWorker) error {
		h, err := rwTake(w, take, write, w.stop, w.leaseOpts()...)
		if h == nil {
			return err
		}
		w.hold()
		inner, err := take(h.ctx, w.leaseOpts()...)
		if err == nil {
			w.hold()
			if err = inner.Unlock(context.Background()); errors.Is(err, ErrLockLost) {
				err = nil // counted with the outer hold
			}
		} else {
			err = w.obtained(err)
		}
		return errors.Join(err, w.release(h))
	}
}

// rwDowngrade takes the write, then a read by the same owner (through the
// write's Context, or with its owner), gives up the write, and holds the
// read on.
func rwDowngrade(rw *RWLock) familyOp {
	return func(w *familyWorker) error {
		wh, err := rwTake(w, rw.Lock, true, w.stop, w.leaseOpts()...)
		if wh == nil {
			return err
		}
		ctx := wh.ctx
		if w.rng.IntN(2) == 0 {
			ctx = WithOwner(w.stop, wh.owner)
		}
		rh, err := rwTake(w, rw.RLock, false, ctx, w.leaseOpts()...)
		if err = errors.Join(err, w.release(wh)); rh == nil {
			return err
		}
		w.hold()
		return errors.Join(err, w.release(rh))
	}
}

// rwLook takes the write of the RW lock called name, which it gets only
// once every hold has ended and the dead entries before it are dropped,
// and gives it up.
func rwLook(ctx context.Context, c *Client, name string) error {
	l, err := c.RWLock(name).Lock(ctx)
	if err != nil {
		return err
	}
	return l.Unlock(ctx)
}
