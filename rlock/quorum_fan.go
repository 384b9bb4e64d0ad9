package rlock

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/batonlock/baton/notify"
)

// nodeReply is one node's answer to one call of a fan-out, and how long
// after the fan-out began it came.
type nodeReply[T any] struct {
	node int
	val  T
	err  error
	took time.Duration
}

// fanOut sends call to each of nodes at once, as clean-ups of c (so Close
// waits for them; once Close has begun, fanOut does, see runEach), each
// bounded by bound, not by ctx: a call whose reply comes after its caller
// stopped listening may have run, and its reply must be seen. fanOut
// returns the replies that came until decided says the outcome is known,
// or every node answered, or ctx ended (then with ctx's error); late gets
// each reply that came after, on the clean-up's goroutine. So every reply
// goes either to the caller or to late, once.
//
// With linger, fanOut goes on listening once decided, for as long again
// as the decision took (or until every node answered, or ctx ended, which
// then is no error): a node a little slower than the others is still
// heard, and one that does not answer (paused, or down) costs at most
// that. decided must stay true as replies are added.
func fanOut[T any](ctx context.Context, c *Client, bound time.Duration, nodes []int,
	call func(ctx context.Context, node int) (T, error),
	decided func([]nodeReply[T]) bool, linger bool, late func(nodeReply[T])) ([]nodeReply[T], error) {
	var mu sync.Mutex // guards listening: whether replies go to ch, or to late
	listening := true
	ch := make(chan nodeReply[T], len(nodes))
	start := time.Now()
	c.background.runEach(bound, nodes, func(bctx context.Context, i int) {
		v, err := call(bctx, i)
		r := nodeReply[T]{node: i, val: v, err: err, took: time.Since(start)}
		mu.Lock()
		if listening {
			ch <- r
			mu.Unlock()
			return
		}
		mu.Unlock()
		late(r)
	})
	got, err := listen(ctx, ch, len(nodes), decided, linger)
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

// listen is fanOut's wait: the replies on ch, of n calls, until decided
// (and, with linger, as long again as that took) or ctx ends.
func listen[T any](ctx context.Context, ch <-chan nodeReply[T], n int, decided func([]nodeReply[T]) bool, linger bool) ([]nodeReply[T], error) {
	start := time.Now()
	var got []nodeReply[T]
	var lingered <-chan time.Time // set once decided, with linger
	for len(got) < n {
		if lingered == nil && len(got) > 0 && decided(got) {
			if !linger {
				break
			}
			lingered = time.After(time.Since(start))
		}
		select {
		case r := <-ch:
			got = append(got, r)
		case <-lingered:
			return got, nil
		case <-ctx.Done():
			if lingered != nil {
				return got, nil
			}
			return got, ctx.Err()
		}
	}
	return got, nil
}

// anyWake is a quorum waiter's wake-up: a delivery on any node's
// subscription. Every wake-up is a nudge to look again on every node (see
// quorumLock.acquire), so which node woke it, and deliveries that came
// together, need no telling apart. A node's subscription may join after
// the waiter began to wait (see quorumLock.subscribe).
type anyWake struct {
	mu      sync.Mutex   // guards sources and closed
	sources []wakeSource // one per node subscribed
	closed  bool
}

// add makes s one of w's sources, or reports false once w is closed: the
// caller then closes s.
func (w *anyWake) add(s wakeSource) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.sources = append(w.sources, s)
	}
	return !w.closed
}

// Wait returns the first delivery of any source (those added when it is
// called), or the first error, once every source's Wait has returned: a
// delivery taken off a subscription after the caller's next look began
// would be lost, and with it the wake-up that look missed.
func (w *anyWake) Wait(ctx context.Context, timeout time.Duration) (notify.Delivery, error) {
	w.mu.Lock()
	sources := slices.Clone(w.sources)
	w.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type wake struct {
		d   notify.Delivery
		err error
	}
	ch := make(chan wake, len(sources))
	for _, s := range sources {
		go func() {
			d, err := s.Wait(ctx, timeout)
			ch <- wake{d, err}
		}()
	}
	first := <-ch
	cancel()
	for range len(sources) - 1 {
		r := <-ch
		if errors.Is(first.err, notify.ErrWaitTimeout) && r.err == nil {
			first = r // a delivery that came as the others timed out
		}
	}
	return first.d, first.err
}

// Close closes every source, and each added after.
func (w *anyWake) Close() {
	w.mu.Lock()
	sources := w.sources
	w.sources, w.closed = nil, true
	w.mu.Unlock()
	for _, s := range sources {
		s.Close()
	}
}
