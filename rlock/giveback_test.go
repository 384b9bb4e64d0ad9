package rlock

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// An RLock's acquire is delayed in the network past the call's read
// timeout, and the network stays down for longer than a clean-up's single
// try (and than undoTimeout): the failed call's give-back must keep
// trying, so that once the delayed acquire arrives and takes a read hold,
// the hold is given back as soon as Redis is reachable, far within its
// 30 s lease, and a writer gets in.
func TestRWCleanupOutlivesAnOutage(t *testing.T) {
	ctx, srv := serve(t)
	c, px := proxiedClient(ctx, t, srv, 200*time.Millisecond, -1)
	writer := newClient(t, srv).RWLock("outage")
	px.Blackhole()
	_, err := c.RWLock("outage").RLock(ctx)
	require.Error(t, err, "the acquire's reply cannot come")
	time.Sleep(undoTimeout + 500*time.Millisecond)
	px.Restore() // the delayed acquire takes the read now
	w, err := writer.TryLock(ctx, WaitAtMost(fast))
	require.NoError(t, err, "the read hold the failed RLock took was not given back within %v", fast)
	require.NoError(t, w.Unlock(ctx))
	requireOnlyFence(t, admin(t, srv), "outage")
}

// Close does not wait out a clean-up that Redis never answers: it gives
// the clean-ups its own bound, then cancels them, and their goroutines end
// (goleak checks at the end of the package's tests).
func TestCloseCancelsACleanupRedisNeverAnswers(t *testing.T) {
	ctx, srv := serve(t)
	c, px := proxiedClient(ctx, t, srv, 200*time.Millisecond, -1)
	px.Blackhole()
	_, err := c.RWLock("never").RLock(ctx)
	require.Error(t, err, "the acquire's reply cannot come")
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	select {
	case <-closed:
	case <-time.After(closeTimeout + fast):
		t.Fatal("Close waited for a clean-up past its bound")
	}
}

// A given owner's grant message that cannot become a handle because its
// client closes as it adopts it (ErrClosed, after D re-entered the owner's
// hold), for the lock and an RW lock's write: the grant is given back
// once, by the waiter's leave or by the hand-back, not by a release as
// well. Before, claim released a count and the waiter's leave, finding its
// grant unclaimed, gave back another: D's count went too, and E took the
// lock beside D.
func TestGrantOfAClosingClientIsGivenBackOnce(t *testing.T) {
	ctx, srv := serve(t)
	for _, kind := range []string{"lock", "write"} {
		t.Run(kind, func(t *testing.T) {
			name, queue := "closing-"+kind, "baton:{closing-"+kind+"}"
			take := func(c *Client, ctx context.Context) (*Lock, error) { return c.Lock(ctx, name) }
			try := func(c *Client, ctx context.Context) (*Lock, error) { return c.TryLock(ctx, name) }
			if kind == "write" {
				queue += ":rw"
				take = func(c *Client, ctx context.Context) (*Lock, error) { return c.RWLock(name).Lock(ctx) }
				try = func(c *Client, ctx context.Context) (*Lock, error) { return c.RWLock(name).TryLock(ctx) }
			}
			grantOfAClosingClient(t, ctx, srv, queue, take, try)
		})
	}
}

// grantOfAClosingClient runs TestGrantOfAClosingClientIsGivenBackOnce's
// sequence on the resource whose keys start with queue's prefix.
func grantOfAClosingClient(t *testing.T, ctx context.Context, srv *redistest.Server, queue string,
	take, try func(c *Client, ctx context.Context) (*Lock, error)) {
	a, d, e := newClient(t, srv), newClient(t, srv), newClient(t, srv)
	b, err := New(admin(t, srv))
	require.NoError(t, err)
	defer b.Close()
	held, err := take(a, ctx)
	require.NoError(t, err)
	owned := WithOwner(ctx, "X")
	var dl *Lock
	var once sync.Once
	b.SetBeforeJoin(func() {
		once.Do(func() {
			// W1's grant is in Redis; D re-enters owner X, then B closes
			// before W1's handle joins the hold.
			var err error
			dl, err = try(d, owned)
			assertNoError(t, err)
			assertNoError(t, b.Close())
		})
	})
	w1 := make(chan error, 1)
	go func() {
		_, err := take(b, owned)
		w1 <- err
	}()
	waitForQueueLen(t, srv, queue, 1)
	require.NoError(t, held.Unlock(ctx))
	require.ErrorIs(t, within(t, w1, "W1 did not return"), ErrClosed)
	require.NotNil(t, dl, "W1's grant was never adopted")
	defer dl.Unlock(ctx)
	if le, err := try(e, ctx); err == nil {
		_ = le.Unlock(ctx)
		t.Fatalf("E got the lock while D's hold of owner X is alive (%v)", dl.Context().Err())
	}
	require.NoError(t, dl.Context().Err())
}
