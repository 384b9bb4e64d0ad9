package rlock_test

// Outside attacks on the multi-lock through ctx: a set that re-enters a
// member through a handle, turns of re-entries, and handles of another
// Client.

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/rlock"
)

// TestAttackLockSetTakesTurns: re-entries through one handle's Context take
// turns, and a set that re-enters through it is one of them: it waits for
// the re-entry held through the same handle.
func TestAttackLockSetTakesTurns(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	c := atkClient(t, srv)
	l, err := c.Lock(ctx, "st-a")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(ctx)
	r, err := c.Lock(l.Context(), "st-a")
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.TryLockAll(l.Context(), []string{"st-a", "st-b"}, rlock.WaitAtMost(300*time.Millisecond))
	if err == nil {
		s.Unlock(ctx)
		t.Fatal("two turns of st-a at once: a set re-entered through the handle while another re-entry through it is held")
	}
	if err := r.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	s, err = c.TryLockAll(l.Context(), []string{"st-a", "st-b"}, rlock.WaitAtMost(time.Second))
	if err != nil {
		t.Fatalf("the set's turn never came: %v", err)
	}
	if err := s.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestAttackLockSetUnlockKeepsReentry: a re-entry of a member through the
// set's Context keeps its Context, and the lock, after the set's Unlock.
func TestAttackLockSetUnlockKeepsReentry(t *testing.T) {
	ctx, _, c, other := atkSetPair(t)
	s, err := c.LockAll(ctx, []string{"su-a", "su-b"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Lock(s.Context(), "su-a")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if r.Context().Err() != nil {
		t.Fatalf("the re-entry's Context ended with the set's Unlock: %v", r.Context().Err())
	}
	atkSetNoSecondHolder(t, ctx, r.Context(), other, "su-a")
	if _, err := other.TryLock(ctx, "su-b"); err != nil {
		t.Fatalf("su-b stayed held after the set's Unlock: %v", err)
	}
	if err := r.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := other.TryLock(ctx, "su-a"); err != nil {
		t.Fatalf("su-a stayed held after its last Unlock: %v", err)
	}
}

// TestAttackLockSetOutlivesOuterHandle: a set that re-entered a member
// through a handle (its first, as ErrLockOrder asks) keeps it after that
// handle's Unlock.
func TestAttackLockSetOutlivesOuterHandle(t *testing.T) {
	ctx, _, c, other := atkSetPair(t)
	order := atkSetOrder(t, ctx, c, []string{"so-a", "so-b"})
	l, err := c.Lock(ctx, order[0])
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.LockAll(l.Context(), order)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if s.Context().Err() != nil {
		t.Fatalf("the set's Context ended with the outer handle's Unlock: %v", s.Context().Err())
	}
	atkSetNoSecondHolder(t, ctx, s.Context(), other, order[0])
	if err := s.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range order {
		if _, err := other.TryLock(ctx, name); err != nil {
			t.Fatalf("%s stayed held after the set's Unlock: %v", name, err)
		}
	}
}

// TestAttackLockSetOtherClientsHandle: a handle of another Client is no
// handle of this one: a set with it in ctx takes its members under an
// owner of its own, and so waits for the other Client's hold.
func TestAttackLockSetOtherClientsHandle(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	c1, c2 := atkClient(t, srv), atkClient(t, srv)
	l, err := c1.Lock(ctx, "soc-a")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(ctx)
	s, err := c2.TryLockAll(l.Context(), []string{"soc-a", "soc-b"})
	if err == nil {
		s.Unlock(ctx)
		t.Fatal("a set on another Client re-entered a hold through a handle of the first")
	}
}

// TestAttackLockSetTurnAfterSetUnlock: r1 and r2 re-enter a member through
// the set's Context, r2 waiting for r1's turn; the set unlocks, then r1:
// the hold is released, so r2 must not come back holding it. r2's ctx
// carries the set's handles but not its end (context.WithoutCancel).
func TestAttackLockSetTurnAfterSetUnlock(t *testing.T) {
	for _, second := range []string{"Lock", "LockAll"} {
		t.Run(second, func(t *testing.T) {
			ctx, _, c, other := atkSetPair(t)
			s, err := c.LockAll(ctx, []string{"tu-a", "tu-b"})
			if err != nil {
				t.Fatal(err)
			}
			r1, err := c.Lock(s.Context(), "tu-a")
			if err != nil {
				t.Fatal(err)
			}
			type res struct {
				ctx context.Context
				err error
			}
			got := make(chan res, 1)
			via := context.WithoutCancel(s.Context())
			go func() {
				if second == "Lock" {
					l, err := c.Lock(via, "tu-a", rlock.WaitAtMost(3*time.Second))
					if err != nil {
						got <- res{nil, err}
						return
					}
					got <- res{l.Context(), nil}
					return
				}
				set, err := c.LockAll(via, []string{"tu-a", "tu-c"}, rlock.WaitAtMost(3*time.Second))
				if err != nil {
					got <- res{nil, err}
					return
				}
				got <- res{set.Context(), nil}
			}()
			time.Sleep(50 * time.Millisecond)
			if err := s.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := r1.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			r := atkWithin(t, got, "the second re-entry's return")
			if r.err != nil {
				t.Logf("the second re-entry was refused: %v", r.err)
				return
			}
			time.Sleep(50 * time.Millisecond)
			atkSetNoSecondHolder(t, ctx, r.ctx, other, "tu-a")
		})
	}
}

// TestAttackLockSetThroughLaterMemberDeadlocks: G1 holds the set's second
// name (canonical order) and takes the set through that handle's Context,
// so it waits for the first name holding the second; G2's plain set holds
// the first and waits for the second. README promises that "sets and
// single locks cannot deadlock": here two sets wait for each other, and
// neither returns while both wait (up to their ctx). G1's set is refused
// at once with ErrLockOrder (it deadlocked on a578abb).
func TestAttackLockSetThroughLaterMemberDeadlocks(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	c1, c2 := atkClient(t, srv), atkClient(t, srv)
	order := atkSetOrder(t, ctx, c1, []string{"dl-a", "dl-b"})
	l, err := c1.Lock(ctx, order[1])
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(ctx)
	wait, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 2)
	go func() {
		s, err := c2.LockAll(wait, order)
		if err == nil {
			s.Unlock(ctx)
		}
		done <- err
	}()
	atkWaitLen(t, srv.Admin(), "baton:{"+order[1]+"}:queue", 1)
	go func() {
		s2, err := c1.LockAll(atkValuesOf{Context: wait, values: l.Context()}, order)
		if err == nil {
			s2.Unlock(ctx)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, rlock.ErrLockOrder) {
			t.Fatalf("the set through %s's handle returned %v, want ErrLockOrder", order[1], err)
		}
	case <-time.After(2 * time.Second):
		cancel()
		t.Fatalf("deadlock: G2's set holds %s and waits for %s, which G1 holds and whose set through its handle waits for %s; neither returned in 2s",
			order[0], order[1], order[0])
	}
}

// atkValuesOf is a ctx that ends with Context and carries the values
// (handles) of values.
type atkValuesOf struct {
	context.Context
	values context.Context
}

func (v atkValuesOf) Value(key any) any { return v.values.Value(key) }

// TestAttackLockSetMemberUnlockedAlone: FromContext(set.Context()) is the
// last member's handle, a *Lock the caller can unlock on its own. The
// set's Context then ends, and the set's Unlock still frees every member.
func TestAttackLockSetMemberUnlockedAlone(t *testing.T) {
	ctx, srv, c, other := atkSetPair(t)
	names := []string{"mu-a", "mu-b", "mu-c"}
	s, err := c.LockAll(ctx, names)
	if err != nil {
		t.Fatal(err)
	}
	l, ok := rlock.FromContext(s.Context())
	if !ok {
		t.Fatal("no Lock in the set's Context")
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if s.Context().Err() == nil {
		t.Fatalf("the set's Context lives on without its member %s", l.Name())
	}
	// Each member's answer is Lock.Unlock's: the member unlocked alone
	// says ErrNotHeld, and the others are released all the same.
	if err := s.Unlock(ctx); !errors.Is(err, rlock.ErrNotHeld) || !strings.Contains(err.Error(), l.Name()) {
		t.Fatalf("the set's Unlock: %v, want ErrNotHeld naming %s", err, l.Name())
	}
	for _, name := range names {
		m, err := other.TryLock(ctx, name)
		if err != nil {
			t.Fatalf("%s stayed held after the set's Unlock: %v", name, err)
		}
		m.Unlock(ctx)
	}
	atkSetNothingLeft(t, srv, "*{mu-*")
}

// TestAttackLockSetUnlockRacesLoss: the set's Unlock races its own client's
// ForceUnlock of a member, after which another client takes it: the set's
// release (by the member's token) never frees the other client's hold.
func TestAttackLockSetUnlockRacesLoss(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	c, y := atkClient(t, srv), atkClient(t, srv)
	for i := 0; i < 20; i++ {
		s, err := c.LockAll(ctx, []string{"ur-a", "ur-b"})
		if err != nil {
			t.Fatal(err)
		}
		taken := make(chan *rlock.Lock, 1)
		go func() {
			c.ForceUnlock(ctx, "ur-b")
			l, err := y.TryLock(ctx, "ur-b")
			if err != nil {
				l = nil
			}
			taken <- l
		}()
		time.Sleep(time.Duration(i%5) * 100 * time.Microsecond)
		uerr := s.Unlock(ctx)
		l := <-taken
		if l == nil {
			continue
		}
		st, err := y.Inspect(ctx, "ur-b")
		if err != nil {
			t.Fatal(err)
		}
		if st.Holders[l.Owner()] != 1 || l.Context().Err() != nil {
			t.Fatalf("round %d: the set's Unlock (%v) freed another client's hold of ur-b: holders %v", i, uerr, st.Holders)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	atkSetNothingLeft(t, srv, "*{ur-*")
}
