package rlock_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/batonlock/baton/rlock"
)

// aqTokens presets node 0's counter of name at ahead (a node whose clock
// ran far ahead, or a counter committed from one), then takes and
// releases name n times, pausing node 0 from the third on: every token is
// above the one before, never 0 ("no assumption about the nodes' clocks").
func aqTokens(t *testing.T, ahead uint64, n int) {
	t.Helper()
	ctx := atkCtx(t)
	srvs := aqNodes(t, 3)
	a := aqQuorum(t, aqDirect(srvs))
	name := fmt.Sprint("ahead", ahead)
	if err := srvs[0].Admin().Set(ctx, atkResourceKey("lock", name)+":fence", fmt.Sprint(ahead), time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	var last uint64
	for i := 0; i < n; i++ {
		if i == 2 {
			// Every release has landed: Lock 2 need not wait (a wait with
			// node 0 paused is finding 6's).
			aqRequireClean(t, srvs, name, "after Unlock")
			srvs[0].Pause()
			t.Cleanup(srvs[0].Resume)
		}
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		l, err := a.Lock(lctx, name)
		cancel()
		if err != nil {
			t.Fatalf("Lock %d with node 0's counter at %d, 2 of 3 nodes fresh: %v; on nodes 1, 2: %s",
				i, ahead, err, aqLeft(ctx, srvs[1:], name))
		}
		if l.Token() == 0 || l.Token() <= last {
			t.Errorf("hold %d: token %d after %d", i, l.Token(), last)
		}
		last = l.Token()
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// Held: a counter an hour ahead on one node.
func TestAtkQuorumTokensRiseFromACounterAhead(t *testing.T) {
	aqTokens(t, uint64(time.Now().Add(time.Hour).UnixMicro()), 4)
}

// A counter at 2^53 µs (a node clock at year 2255) or above.
func TestAtkQuorumTokensRiseAbove2To53(t *testing.T) {
	aqTokens(t, 1<<53, 4)
}

// A counter near the int64 limit on one node of 3: the other two are a
// majority and must still grant, within a bound.
func TestAtkQuorumCounterNearOverflow(t *testing.T) {
	aqTokens(t, math.MaxInt64-1, 2)
}

// Held: ForceUnlock ends A's hold; B takes and releases the lock; A's
// re-entry through its handle's Context is refused (its hold is lost), and
// a Lock by A's WithOwner owner is a new hold with a token above B's.
func TestAtkQuorumReentryAfterForceUnlock(t *testing.T) {
	for _, via := range []string{"handle", "owner"} {
		t.Run(via, func(t *testing.T) {
			ctx := atkCtx(t)
			srvs := aqNodes(t, 3)
			a := aqQuorum(t, aqDirect(srvs))
			b := aqQuorum(t, aqDirect(srvs))
			actx := rlock.WithOwner(ctx, "ownerA")
			la, err := a.Lock(actx, "forced")
			if err != nil {
				t.Fatal(err)
			}
			if n, err := b.ForceUnlock(ctx, "forced"); err != nil || n != 1 {
				t.Fatalf("ForceUnlock = %d, %v", n, err)
			}
			lb, err := b.Lock(ctx, "forced")
			if err != nil {
				t.Fatal(err)
			}
			if err := lb.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			if via == "handle" {
				actx = la.Context()
			}
			l, err := a.Lock(actx, "forced")
			switch {
			case via == "handle" && err == nil:
				t.Fatalf("re-entry through a force-unlocked hold's Context took the lock, token %d (B's %d)", l.Token(), lb.Token())
			case via == "handle":
				if la.Context().Err() == nil {
					t.Fatalf("re-entry refused (%v), the lost hold's Context still live", err)
				}
			case err != nil:
				t.Fatal(err)
			case l.Token() <= lb.Token():
				t.Fatalf("A's new hold after B's: token %d <= B's %d", l.Token(), lb.Token())
			}
		})
	}
}
