package rlock

import (
	"context"
	"errors"

	"github.com/batonlock/baton/reentrant"
)

// rwTaker is RWLock.RLock, Lock, TryRLock or TryLock, or a plain lock's
// Lock or TryLock of one name.
type rwTaker func(context.Context, ...LockOption) (*Lock, error)

// rwFamilyOps are the RW lock's operations: reads and writes (plain,
// cancelled while they may wait, or bounded tries), re-entries in the same
// mode, and downgrades.
func rwFamilyOps(c *Client, name string) []familyOp {
	rw := c.RWLock(name)
	read, write := rwTaking(rw.RLock, false), rwTaking(rw.Lock, true)
	return []familyOp{
		familyOnce(read, familyWaits), familyOnce(read, familyWaits), familyOnce(write, familyWaits),
		nestedOnce(rwTaking(rw.RLock, false), rw.RLock), nestedOnce(rwTaking(rw.Lock, true), rw.Lock), rwDowngrade(rw),
		familyOnce(read, familyCancelled), familyOnce(write, familyCancelled),
		familyOnce(rwTaking(rw.TryRLock, false), familyBounded), familyOnce(rwTaking(rw.TryLock, true), familyBounded),
	}
}

// rwTaking is take (RLock, Lock, TryRLock or TryLock) as a holdTaker.
func rwTaking(take rwTaker, write bool) holdTaker {
	if write {
		return lockTaking(take, string(reentrant.ModeWrite), reentrant.WriteWeight)
	}
	return lockTaking(take, string(reentrant.ModeRead), 1)
}

// lockTaking is take, which takes a Lock (of a plain or an RW lock), as a
// holdTaker of holds of mode and weight.
func lockTaking(take rwTaker, mode string, weight int64) holdTaker {
	return func(ctx context.Context, opts ...LockOption) (*familyHold, error) {
		l, err := take(ctx, opts...)
		if err != nil {
			return nil, err
		}
		return &familyHold{mode: mode, owner: l.Owner(), weight: weight, ctx: l.Context(), release: l.Unlock}, nil
	}
}

// nestedOnce takes a hold with take and re-enters it with reenter (in
// its own mode: a read in a read, a write in a write) through its
// Context, and gives up the re-entry first.
func nestedOnce(take holdTaker, reenter rwTaker) familyOp {
	return func(w *familyWorker) error {
		h, err := w.takeHold(take, w.stop, w.leaseOpts()...)
		if h == nil {
			return err
		}
		w.hold(h.ctx)
		inner, err := reenter(h.ctx, w.leaseOpts()...)
		if err == nil {
			w.hold(inner.Context())
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
		wh, err := w.takeHold(rwTaking(rw.Lock, true), w.stop, w.leaseOpts()...)
		if wh == nil {
			return err
		}
		ctx := wh.ctx
		if w.rng.IntN(2) == 0 {
			ctx = WithOwner(w.stop, wh.owner)
		}
		rh, err := w.takeHold(rwTaking(rw.RLock, false), ctx, w.leaseOpts()...)
		if err = errors.Join(err, w.release(wh)); rh == nil {
			return err
		}
		w.hold(rh.ctx)
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
