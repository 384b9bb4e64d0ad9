package rlock

import (
	"context"
	"errors"
	"testing"

	"github.com/batonlock/baton/reentrant"
)

// semAcquirer is Semaphore.Acquire or TryAcquire.
type semAcquirer func(context.Context, int64, ...LockOption) (*Permit, error)

// semFamilyOps are the semaphore's operations on semSize permits: asks
// for 1 or 2 (and now and then 3, a head that blocks the asks behind it),
// waiting, cancelled while they may wait or hold, or bounded tries; and a
// holder that tries for more permits of its own.
func semFamilyOps(c *Client, name string) []familyOp {
	sem := c.Semaphore(name, semSize)
	acquire := func(n int64) holdTaker { return semTaking(sem.Acquire, n) }
	try := func(n int64) holdTaker { return semTaking(sem.TryAcquire, n) }
	return []familyOp{
		familyOnce(acquire(1), familyWaits), familyOnce(acquire(1), familyWaits),
		familyOnce(acquire(2), familyWaits), familyOnce(acquire(3), familyWaits),
		familyOnce(acquire(1), familyCancelled), familyOnce(acquire(2), familyCancelled),
		familyOnce(try(1), familyBounded), familyOnce(try(2), familyBounded),
		semMore(acquire(1), try(2)), semMore(acquire(2), try(1)),
	}
}

// semTaking is acquire of n permits as a holdTaker.
func semTaking(acquire semAcquirer, n int64) holdTaker {
	return func(ctx context.Context, opts ...LockOption) (*familyHold, error) {
		p, err := acquire(ctx, n, opts...)
		if err != nil {
			return nil, err
		}
		return &familyHold{mode: string(reentrant.ModePermits), owner: p.Owner(), weight: n, ctx: p.Context(),
			release: p.Release}, nil
	}
}

// semMore takes permits with first, then more with more through the
// first's Context (an owner of their own, which the checker counts apart),
// gives those back and then the first. more must be bounded (a try): a
// holder that waited unbounded for more could wait for ever on another
// that does the same.
func semMore(first, more holdTaker) familyOp {
	return func(w *familyWorker) error {
		h, err := w.takeHold(first, w.stop, w.leaseOpts()...)
		if h == nil {
			return err
		}
		w.hold(h.ctx)
		inner, err := w.takeHold(more, h.ctx, append(w.leaseOpts(), WaitAtMost(w.shortly()))...)
		if inner != nil {
			w.hold(inner.ctx)
			err = errors.Join(err, w.release(inner))
		}
		return errors.Join(err, w.release(h))
	}
}

// semLook takes every permit of the semaphore called name, which it gets
// only once every hold has ended and the dead entries before it are
// dropped, and gives them back.
func semLook(ctx context.Context, c *Client, name string) error {
	p, err := c.Semaphore(name, semSize).Acquire(ctx, semSize)
	if err != nil {
		return err
	}
	return p.Release(ctx)
}

// Issue 25 property 1: over random asks for 1 to 3 of 4 permits (waiting,
// cancelled, bounded tries, more permits asked by a holder) from 4
// processes, some SIGKILLed, a checker never sees more permits held than
// the size.
func TestSemaphoreSafetyAcrossKilledProcesses(t *testing.T) {
	runFamily(t, semMember)
}
