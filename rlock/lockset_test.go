package rlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/notify/slot"
)

// requireNothingLeft checks, by Inspect and by a scan of the keys of each
// name, that nobody holds or waits for any of names: only the fencing
// counters, request records and acknowledgement keys, which expire, may
// be left.
func requireNothingLeft(ctx context.Context, t *testing.T, c *Client, rdb *redis.Client, names ...string) {
	t.Helper()
	for _, name := range names {
		st, err := c.Inspect(ctx, name)
		require.NoError(t, err)
		require.Empty(t, st.Holders, "%q is held", name)
		var keys []string
		iter := rdb.Scan(ctx, 0, "*{"+name+"}*", 100).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		require.NoError(t, iter.Err())
		for _, k := range keys {
			ok := strings.HasSuffix(k, ":fence") || strings.Contains(k, ":req:") || strings.HasSuffix(k, ":ack")
			require.True(t, ok, "key %q is left", k)
		}
	}
}

// TestLockAllTakesAndUnlocks: a free set is taken whole, in the canonical
// order, with a token per member; Unlock frees every member.
func TestLockAllTakesAndUnlocks(t *testing.T) {
	ctx, srv := serve(t)
	c := newClient(t, srv)
	names := []string{"m-c", "m-a", "m-b", "m-a"}
	s, err := c.LockAll(ctx, names)
	require.NoError(t, err)
	got := s.Names()
	require.Len(t, got, 3, "duplicates count once")
	for i := 1; i < len(got); i++ {
		a, b := slot.Of(lockKey(got[i-1])), slot.Of(lockKey(got[i]))
		require.True(t, a < b || a == b && got[i-1] < got[i], "not in the canonical order: %v", got)
	}
	for _, name := range got {
		st, err := c.Inspect(ctx, name)
		require.NoError(t, err)
		require.Len(t, st.Holders, 1)
		require.Equal(t, st.LastToken, s.Token(name))
	}
	require.Zero(t, s.Token("not-a-member"))
	require.NoError(t, s.Context().Err())

	require.NoError(t, s.Unlock(ctx))
	require.ErrorIs(t, context.Cause(s.Context()), context.Canceled)
	requireNothingLeft(ctx, t, c, admin(t, srv), got...)
	require.ErrorIs(t, s.Unlock(ctx), ErrNotHeld)
}

// TestLockAllContextReenters: a Lock call for a member with the set's
// Context re-enters through the member's handle, and a LockAll with it
// re-enters the members it holds and takes the rest.
func TestLockAllContextReenters(t *testing.T) {
	ctx, srv := serve(t)
	c := newClient(t, srv)
	s, err := c.LockAll(ctx, []string{"r-a", "r-b", "r-c"})
	require.NoError(t, err)
	for _, name := range s.Names() {
		l, err := c.TryLock(s.Context(), name)
		require.NoError(t, err, name)
		require.Equal(t, Reentered, l.kind)
		require.Equal(t, s.Token(name), l.Token())
		require.NoError(t, l.Unlock(ctx))
	}
	inner, err := c.TryLockAll(s.Context(), []string{"r-b", "r-d"})
	require.NoError(t, err)
	require.Equal(t, s.Token("r-b"), inner.Token("r-b"))
	require.NoError(t, inner.Unlock(ctx))
	st, err := c.Inspect(ctx, "r-b")
	require.NoError(t, err)
	require.Len(t, st.Holders, 1, "the outer set still holds r-b")
	require.NoError(t, s.Unlock(ctx))
	requireNothingLeft(ctx, t, c, admin(t, srv), "r-a", "r-b", "r-c", "r-d")
}

// TestLockAllWaitsForHeld: a set waits in the queue of a held member,
// holding the members before it, and takes the rest once granted.
func TestLockAllWaitsForHeld(t *testing.T) {
	ctx, srv := serve(t)
	c := newClient(t, srv)
	names := []string{"w-a", "w-b", "w-c"}
	holder, err := c.Lock(ctx, names[1])
	require.NoError(t, err)
	got := make(chan *LockSet, 1)
	go func() {
		s, err := c.LockAll(ctx, names)
		assertNoError(t, err)
		got <- s
	}()
	waitForQueued(t, srv, names[1], 1)
	require.NoError(t, holder.Unlock(ctx))
	select {
	case s := <-got:
		require.NotNil(t, s)
		require.NoError(t, s.Unlock(ctx))
	case <-time.After(fast):
		t.Fatal("the set was not granted")
	}
	requireNothingLeft(ctx, t, c, admin(t, srv), names...)
}

// TestDoAll runs fn holding the set, with the set's Context, and unlocks.
func TestDoAll(t *testing.T) {
	ctx, srv := serve(t)
	c := newClient(t, srv)
	names := []string{"d-a", "d-b"}
	ran := false
	err := c.DoAll(ctx, names, func(fctx context.Context) error {
		ran = true
		for _, name := range names {
			l, err := c.TryLock(fctx, name)
			if err != nil {
				return err
			}
			if l.kind != Reentered {
				return fmt.Errorf("%q: %v, not re-entered", name, l.kind)
			}
			if err := l.Unlock(fctx); err != nil {
				return err
			}
		}
		return errors.New("fn's error")
	})
	require.True(t, ran)
	require.EqualError(t, err, "fn's error")
	requireNothingLeft(ctx, t, c, admin(t, srv), names...)
}

// TestLockAllBadInput: bad input is refused before any call to Redis (the
// client's server is stopped, so a call would fail otherwise).
func TestLockAllBadInput(t *testing.T) {
	ctx, srv := serve(t)
	c := newClient(t, srv)
	srv.Stop()
	tooMany := make([]string, MaxLockSet+1)
	for i := range tooMany {
		tooMany[i] = fmt.Sprintf("n%d", i)
	}
	dupes := make([]string, 2*MaxLockSet)
	for i := range dupes {
		dupes[i] = fmt.Sprintf("n%d", i%MaxLockSet)
	}
	for _, tc := range []struct {
		names []string
		opts  []LockOption
		want  error
	}{
		{nil, nil, ErrInvalidOption},
		{[]string{}, nil, ErrInvalidOption},
		{[]string{"a", ""}, nil, ErrInvalidName},
		{[]string{"a", "b{c}"}, nil, ErrInvalidName},
		{tooMany, nil, ErrInvalidOption},
		{[]string{"a"}, []LockOption{WithLease(time.Millisecond)}, ErrInvalidLease},
		{[]string{"a"}, []LockOption{WaitAtMost(-time.Second)}, ErrInvalidOption},
	} {
		_, err := c.LockAll(ctx, tc.names, tc.opts...)
		require.ErrorIs(t, err, tc.want)
		_, err = c.TryLockAll(ctx, tc.names, tc.opts...)
		require.ErrorIs(t, err, tc.want)
		err = c.DoAll(ctx, tc.names, func(context.Context) error { return nil }, tc.opts...)
		require.ErrorIs(t, err, tc.want)
	}
	// MaxLockSet names, each twice, are MaxLockSet names: past the check,
	// the call fails on the stopped server.
	_, err := c.TryLockAll(ctx, dupes)
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrInvalidOption)

	wire, err := New(redistest.Start(t).Client(), WithRedissonWire(""))
	require.NoError(t, err)
	defer wire.Close()
	_, err = wire.LockAll(ctx, []string{"a"})
	require.ErrorIs(t, err, ErrInvalidOption)
	require.ErrorIs(t, err, errors.ErrUnsupported)
}

// TestLockAllAgainstOrder: a set that may wait, through a ctx holding a
// later member than one it does not hold, is refused with ErrLockOrder
// before anything is sent; a set that cannot wait (TryLockAll), or whose
// held members come first, is not.
func TestLockAllAgainstOrder(t *testing.T) {
	ctx, srv := serve(t)
	c := newClient(t, srv)
	order := inOrder(t, c, "o-a", "o-b", "o-c")
	l, err := c.Lock(ctx, order[1])
	require.NoError(t, err)
	_, err = c.LockAll(l.Context(), order)
	require.ErrorIs(t, err, ErrLockOrder)
	require.ErrorContains(t, err, order[0])
	_, err = c.TryLockAll(l.Context(), order, WaitAtMost(time.Second))
	require.ErrorIs(t, err, ErrLockOrder)
	requireNothingLeft(ctx, t, c, admin(t, srv), order[0], order[2])
	s, err := c.TryLockAll(l.Context(), order)
	require.NoError(t, err, "a set that cannot wait cannot deadlock")
	require.NoError(t, s.Unlock(ctx))
	require.NoError(t, l.Unlock(ctx))

	first, err := c.Lock(ctx, order[0])
	require.NoError(t, err)
	s, err = c.LockAll(first.Context(), order)
	require.NoError(t, err, "held members first")
	require.NoError(t, s.Unlock(ctx))
	require.NoError(t, first.Unlock(ctx))
}
