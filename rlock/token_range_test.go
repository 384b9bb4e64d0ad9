package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/reentrant"
	"github.com/batonlock/baton/rlock"
)

// On one node, a lock whose counter is at the end of the exact token range
// (a counter set far ahead: 2^53 µs is in the year 2255) refuses Lock and
// TryLock at once with ErrTokenOverflow, and takes nothing. Before, a
// counter at 2^53 handed out 2^53 to holder after holder, and one near
// 2^63 handed out 2^63 while the counter read -2^63: that hold's Unlock
// found it not held, and the next token fell back to the clock.
func TestTokenOverflowRefusesLock(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	c, err := rlock.New(srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	fence := atkResourceKey("lock", "edge") + ":fence"
	set := func(n uint64) {
		if err := srv.Admin().Set(ctx, fence, fmt.Sprint(n), 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	set(reentrant.MaxToken - 1)
	l, err := c.Lock(ctx, "edge")
	if err != nil {
		t.Fatal(err)
	}
	if l.Token() != reentrant.MaxToken {
		t.Fatalf("token %d with the counter at MaxToken-1, want %d", l.Token(), uint64(reentrant.MaxToken))
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for _, counter := range []uint64{reentrant.MaxToken, 1 << 53, math.MaxInt64 - 1} {
		set(counter)
		for call, take := range map[string]func(context.Context, string, ...rlock.LockOption) (*rlock.Lock, error){
			"Lock": c.Lock, "TryLock": c.TryLock} {
			lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			l, err := take(lctx, "edge")
			ended := lctx.Err()
			cancel()
			switch {
			case err == nil:
				t.Fatalf("%s with the counter at %d: token %d", call, counter, l.Token())
			case !errors.Is(err, rlock.ErrTokenOverflow) || ended != nil:
				t.Fatalf("%s with the counter at %d: %v (ctx: %v), want ErrTokenOverflow at once", call, counter, err, ended)
			}
		}
		if got := srv.Admin().Get(ctx, fence).Val(); got != fmt.Sprint(counter) {
			t.Fatalf("counter %s after the refused calls, was %d", got, counter)
		}
		if n := srv.Admin().Exists(ctx, atkResourceKey("lock", "edge")).Val(); n != 0 {
			t.Fatalf("a refused Lock left the lock held")
		}
	}
}
