package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/batonlock/baton/rlock"
)

// Lock calls whose ctx ends at every moment of their two rounds (0 to
// 3 ms in steps of 100 µs), with a holder elsewhere half of the time: a
// call that fails leaves nothing on any node, and one that succeeds
// unlocks cleanly.
func TestAtkQuorumCancelAtEveryMoment(t *testing.T) {
	ctx := atkCtx(t)
	srvs := aqNodes(t, 3)
	a := aqQuorum(t, aqDirect(srvs))
	other := aqQuorum(t, aqDirect(srvs))
	for i := 0; i < 30; i++ {
		name := fmt.Sprint("cancel", i)
		var held *rlock.Lock
		if i%2 == 1 {
			var err error
			if held, err = other.Lock(ctx, name, rlock.WithLease(50*time.Millisecond)); err != nil {
				t.Fatal(err)
			}
		}
		cctx, cancel := context.WithTimeout(ctx, time.Duration(i)*100*time.Microsecond)
		l, err := a.Lock(cctx, name)
		cancel()
		switch {
		case err == nil:
			if err := l.Unlock(ctx); err != nil {
				t.Fatalf("%s: Unlock: %v", name, err)
			}
		case !errors.Is(err, rlock.ErrNotObtained) && !errors.Is(err, rlock.ErrNoQuorum):
			t.Fatalf("%s: %v", name, err)
		}
		if held != nil {
			_ = held.Unlock(ctx)
		}
		aqRequireClean(t, srvs, name, "after the call "+fmt.Sprint(err))
	}
}
