package rlock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/batonlock/baton/notify"
)

// nodeReply is one node's answer to one call of a fan-out.
type nodeReply[T any] struct {
	node int
	val  T
	err  error
}

// fanOut sends call to each of nodes at once, as clean-ups of c (so Close
// waits for them), each bounded by bound, not by ctx: a call whose reply
// comes after its caller stopped listening may have run, and its reply
// must be seen. fanOut returns the replies that came until decided says
// the outcome is known, or every node answered, or ctx ended (then with
// ctx's error); late gets each reply that came after, on the clean-up's
// goroutine. So every reply goes either to the caller or to late, once.
func fanOut[T any](ctx context.Context, c *Client, bound time.Duration, nodes []int,
	call func(ctx context.Context, node int) (T, error),
	decided func([]nodeReply[T]) bool, late func(nodeReply[T])) ([]nodeReply[T], error) {
	var mu sync.Mutex // guards listening: whether replies go to ch, or to late
	listening := true
	ch := make(chan nodeReply[T], len(nodes))
	for _, i := range nodes {
		c.background.run(bound, func(bctx context.Context) {
			v, err := call(bctx, i)
			r := nodeReply[T]{node: i, val: v, err: err}
			mu.Lock()
			if listening {
				ch <- r
				mu.Unlock()
				return
			}
			mu.Unlock()
			late(r)
		})
	}
	var got []nodeReply[T]
	var err error
	for len(got) < len(nodes) && (len(got) == 0 || !decided(got)) {
		select {
		case r := <-ch:
			got = append(got, r)
		case <-ctx.Done():
			err = ctx.Err()
		}
		if err != nil {
			break
		}
	}
	mu.Lock()
	listening = false
	mu.Unlock()
	for len(ch) > 0 {
		r := <-ch
		if err != nil || decided(got) {
			c.background.run(bound, func(context.Context) { late(r) })
			continue
		}
		got = append(got, r)
	}
	return got, err
}

// anyWake is a quorum waiter's wake-up: a delivery on any node's
// subscription. Every wake-up is a nudge to look again on every node (see
// quorumLock.acquire), so which node woke it, and deliveries that came
// together, need no telling apart.
type anyWake []wakeSource

// Wait returns the first delivery of any node, or the first error, once
// every node's Wait has returned: a delivery taken off a subscription
// after the caller's next look began would be lost, and with it the
// wake-up that look missed.
func (w anyWake) Wait(ctx context.Context, timeout time.Duration) (notify.Delivery, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type wake struct {
		d   notify.Delivery
		err error
	}
	ch := make(chan wake, len(w))
	for _, s := range w {
		go func() {
			d, err := s.Wait(ctx, timeout)
			ch <- wake{d, err}
		}()
	}
	first := <-ch
	cancel()
	for range len(w) - 1 {
		r := <-ch
		if errors.Is(first.err, notify.ErrWaitTimeout) && r.err == nil {
			first = r // a delivery that came as the others timed out
		}
	}
	return first.d, first.err
}

// Close closes every node's subscription.
func (w anyWake) Close() {
	for _, s := range w {
		s.Close()
	}
}
