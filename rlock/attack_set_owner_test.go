package rlock_test

// Outside attacks on the multi-lock: a set and single Locks that share one
// owner (WithOwner). A failed set gives back its own counts only, never a
// count another call of the owner holds.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/rlock"
)

// TestAttackLockSetGiveBackKeepsSharedOwnersCount: owner O's set holds its
// first member and waits for the second; O's single Lock of the first
// re-enters (before or after the set took it); the set gives up. The
// single Lock still holds the first member in Redis.
func TestAttackLockSetGiveBackKeepsSharedOwnersCount(t *testing.T) {
	for _, single := range []string{"before the set", "while the set waits"} {
		t.Run(single, func(t *testing.T) {
			ctx := atkCtx(t)
			srv := redistest.Start(t)
			c, x, other := atkClient(t, srv), atkClient(t, srv), atkClient(t, srv)
			names := []string{"sgo-a", "sgo-b"}
			order := atkSetOrder(t, ctx, c, names)
			first, second := order[0], order[1]
			owned := rlock.WithOwner(ctx, "sgo-owner")
			xl, err := x.Lock(ctx, second)
			if err != nil {
				t.Fatal(err)
			}
			defer xl.Unlock(ctx)
			var l *rlock.Lock
			if single == "before the set" {
				if l, err = c.Lock(owned, first); err != nil {
					t.Fatal(err)
				}
			}
			sctx, cancel := context.WithCancel(owned)
			setDone := make(chan error, 1)
			go func() {
				s, err := c.LockAll(sctx, names)
				if err == nil {
					s.Unlock(ctx)
				}
				setDone <- err
			}()
			atkWaitLen(t, srv.Admin(), "baton:{"+second+"}:queue", 1)
			if l == nil {
				if l, err = c.TryLock(owned, first); err != nil {
					t.Fatalf("owner's single Lock did not re-enter the set's hold: %v", err)
				}
			}
			defer l.Unlock(ctx)
			cancel()
			if err := atkWithin(t, setDone, "the set's return"); !errors.Is(err, rlock.ErrNotObtained) {
				t.Fatalf("the cancelled set returned %v", err)
			}
			time.Sleep(50 * time.Millisecond)
			if l.Context().Err() != nil {
				t.Fatalf("the single Lock's Context ended with the set's give-back: %v", context.Cause(l.Context()))
			}
			atkSetNoSecondHolder(t, ctx, l.Context(), other, first)
		})
	}
}

// TestAttackLockSetUnlockKeepsSharedOwnersCount: owner O's set and O's
// single Lock of a member; the set's Unlock leaves the single Lock's count.
func TestAttackLockSetUnlockKeepsSharedOwnersCount(t *testing.T) {
	ctx, _, c, other := atkSetPair(t)
	owned := rlock.WithOwner(ctx, "suo-owner")
	s, err := c.LockAll(owned, []string{"suo-a", "suo-b"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.Lock(owned, "suo-b")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(ctx)
	if err := s.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if l.Context().Err() != nil {
		t.Fatalf("the single Lock's Context ended with the set's Unlock: %v", context.Cause(l.Context()))
	}
	atkSetNoSecondHolder(t, ctx, l.Context(), other, "suo-b")
}
