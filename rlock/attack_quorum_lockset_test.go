package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/batonlock/baton/rlock"
)

// LockAll, TryLockAll and DoAll on a NewQuorum Client: quorum mode
// supports the plain lock's calls and refuses what it does not support
// with ErrQuorumUnsupported. A lock set must either span the quorum (a
// majority for each member, excluding another quorum Client's Lock) or be
// refused with ErrQuorumUnsupported; it must never panic.
func TestAtkQuorumLockSet(t *testing.T) {
	for _, call := range []string{"LockAll", "TryLockAll", "DoAll"} {
		t.Run(call, func(t *testing.T) {
			ctx := atkCtx(t)
			srvs := aqNodes(t, 3)
			a := aqQuorum(t, aqDirect(srvs))
			b := aqQuorum(t, aqDirect(srvs))
			err := aqSetCall(ctx, a, call, func() error {
				if l, err := b.TryLock(ctx, "x"); err == nil {
					_ = l.Unlock(ctx)
					return fmt.Errorf("another quorum Client took member x beside the set (token %d)", l.Token())
				}
				return nil
			})
			if err != nil && !errors.Is(err, rlock.ErrQuorumUnsupported) {
				t.Fatal(err)
			}
			aqRequireClean(t, srvs, "x", "after "+call)
		})
	}
}

// aqSetCall runs call on c for members x and y, then inside runs while
// the set is held; a panic is returned as an error.
func aqSetCall(ctx context.Context, c *rlock.Client, call string, inside func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s panicked: %v", call, p)
		}
	}()
	names := []string{"x", "y"}
	if call == "DoAll" {
		return c.DoAll(ctx, names, func(context.Context) error { return inside() })
	}
	take := c.LockAll
	if call == "TryLockAll" {
		take = c.TryLockAll
	}
	set, err := take(ctx, names)
	if err != nil {
		return err
	}
	return errors.Join(inside(), set.Unlock(ctx))
}
