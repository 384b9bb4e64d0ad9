package rlock

import (
	"context"
	"errors"
	"sync"
	"time"
)

// semWorkload starts the semaphore's part of aclWorkload: a's permits (all
// of them), which a's watchdog renews while they are held, and b's ask for
// one more, queued until a's SetSize raises the size and grants it, then
// released on wg (its error in waitErr).
func semWorkload(ctx context.Context, a, b *Client, name string, wg *sync.WaitGroup, waitErr *error) (*Permit, error) {
	sem := a.Semaphore(name, 2)
	p, err := sem.Acquire(ctx, 2)
	if err != nil {
		return nil, err
	}
	wg.Go(func() {
		q, err := b.Semaphore(name, 2).Acquire(ctx, 1)
		if err == nil {
			err = q.Release(ctx)
		}
		*waitErr = err
	})
	for {
		st, err := sem.Inspect(ctx)
		if err != nil || st.Queued >= 1 {
			return p, errors.Join(err, sem.SetSize(ctx, 3))
		}
		select {
		case <-ctx.Done():
			return p, ctx.Err()
		case <-time.After(5 * time.Millisecond): // forty workloads run at once
		}
	}
}

// semRelease ends semWorkload's part: Inspect, the permits' Release, and a
// ForceRelease of permits held again.
func semRelease(ctx context.Context, a, b *Client, name string, p *Permit) error {
	sem := a.Semaphore(name, 2)
	if _, err := sem.Inspect(ctx); err != nil {
		return err
	}
	if err := p.Release(ctx); err != nil {
		return err
	}
	if _, err := sem.Acquire(ctx, 1); err != nil {
		return err
	}
	if n, err := b.Semaphore(name, 2).ForceRelease(ctx); err != nil || n == 0 {
		return errors.Join(err, errors.New("semaphore ForceRelease found nothing"))
	}
	return nil
}
