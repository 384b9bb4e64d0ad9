package rlock

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/reentrant"
)

// A hold's end at its edges (issue 22): a hold whose validity has passed
// before it is built, a grant whose validity passes while it is adopted, a
// release that fails after the lease ran out on a hold being given up.

// A hold whose validity has already passed when it starts: its expiry timer
// fires at once, and must find the hold fully built, since it reads the
// hold's own timer. Under -race a timer armed before the hold has it is a
// race on every run; without -race it can be a nil dereference.
func TestTimerOfAPassedHoldFindsItBuilt(t *testing.T) {
	const lease = time.Second
	var losses atomic.Int32
	c := &Client{}
	c.cfg.onLost = func(string, error) { losses.Add(1) }
	keys, err := reentrant.Namespace{}.Keys("passed")
	require.NoError(t, err)
	for i := range 200 {
		sent := time.Now().Add(-lease)
		if i%2 == 0 {
			sent = time.Now().Add(driftMargin(lease) - lease) // valid until now
		}
		h := c.newHold(&plainLock{keys: keys}, "owner", holdGrant{id: uint64(i + 1), token: uint64(i + 1)}, sent, lease)
		select {
		case <-h.done:
		case <-time.After(5 * time.Second):
			t.Fatalf("hold %d: its timer never ended it", i)
		}
	}
	require.Zero(t, losses.Load(), "a hold nobody joined was reported lost")
}

// A call that shares its owner with a hold here re-enters that hold in
// Redis; if the hold ends before the call joins it, the call starts a hold
// of its own from its grant. When that grant's validity has passed by then,
// it is a dead grant: given back, never reported lost (the caller never
// held it), and the call goes on to take a fresh lock.
func TestGrantThatPassesWhileAdoptedIsGivenBack(t *testing.T) {
	ctx, srv := serve(t)
	const lease = 300 * time.Millisecond
	var handled, observed atomic.Int32
	c := newClient(t, srv,
		WithObserver(Observer{Lost: func(Loss) { observed.Add(1) }}),
		WithLostHandler(func(string, error) { handled.Add(1) }))
	owned := WithOwner(ctx, "shared")
	first, err := c.Lock(owned, "passing", WithLease(lease))
	require.NoError(t, err)
	var once sync.Once
	c.SetBeforeJoin(func() {
		once.Do(func() {
			// The second call has found first's hold: it ends, and the
			// second call's grant outlives its validity.
			assertNoError(t, first.Unlock(ctx))
			time.Sleep(lease)
		})
	})
	second, err := c.Lock(owned, "passing", WithLease(lease))
	require.NoError(t, err)
	require.NoError(t, second.Context().Err(), "Lock returned a lock whose validity had passed")
	require.Greater(t, second.Token(), first.Token(), "not a fresh hold")
	require.NoError(t, second.Unlock(ctx))
	require.Zero(t, handled.Load(), "the lost handler ran for a grant the caller never held")
	require.Zero(t, observed.Load(), "Observer.Lost ran for a grant the caller never held")
}

// The lease runs out on a hold being given up while its release gets no
// answer. The lock is free in Redis by expiry whatever became of the
// release, and the handle held it until it began to unlock: the outcome of
// a confirmed release, so Unlock returns nil, and nothing is lost. A
// re-entry through the handle meanwhile is not obtained: it is not held.
func TestFailedReleaseAfterTheLeaseRanOut(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	p := startProxy(t, srv.Addr)
	const lease = 100 * time.Millisecond
	var losses atomic.Int32
	c, err := New(p.client(t, func(o *redis.Options) { o.MaxRetries, o.ReadTimeout = -1, 5*lease }),
		WithWatchdogLease(lease), WithLostHandler(func(string, error) { losses.Add(1) }))
	require.NoError(t, err)
	defer c.Close()
	l, err := c.Lock(ctx, "ran-out")
	require.NoError(t, err)
	p.Blackhole() // the release never reaches Redis, and no reply comes
	unlocked := make(chan error, 1)
	go func() { unlocked <- l.Unlock(ctx) }()

	select {
	case <-l.Context().Done(): // at its validity, while the release waits
	case <-time.After(5 * time.Second):
		t.Fatal("the hold outlived its validity")
	}
	require.ErrorIs(t, context.Cause(l.Context()), context.Canceled)
	_, err = c.Lock(context.WithoutCancel(l.Context()), "ran-out")
	require.ErrorIs(t, err, ErrNotObtained)
	require.ErrorIs(t, err, ErrNotHeld, "a re-entry through a given-up hold")
	require.NotErrorIs(t, err, errReleased)

	select {
	case err := <-unlocked:
		require.NoError(t, err, "Unlock of a given-up hold whose release failed")
	case <-time.After(5 * time.Second):
		t.Fatal("Unlock outlived its read timeout")
	}
	require.ErrorIs(t, l.Unlock(ctx), ErrNotHeld, "the handle is done")
	require.Zero(t, losses.Load(), "a hold being given up was reported lost")
	require.Eventually(t, func() bool { return rdb.Exists(ctx, lockKey("ran-out")).Val() == 0 },
		lease, 5*time.Millisecond, "the lease did not free the lock")
}

// A re-entry through a handle whose hold has been released is not
// obtained, and says the lock is not held.
func TestReentryThroughAReleasedHoldIsNotHeld(t *testing.T) {
	ctx, srv := serve(t)
	c := newClient(t, srv)
	l, err := c.Lock(ctx, "given-up")
	require.NoError(t, err)
	require.NoError(t, l.Unlock(ctx))
	_, err = c.Lock(context.WithoutCancel(l.Context()), "given-up")
	require.ErrorIs(t, err, ErrNotObtained)
	require.ErrorIs(t, err, ErrNotHeld)
	require.NotErrorIs(t, err, errReleased)
}
