package rlock_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/batonlock/baton/rlock"
)

// A holds, waiters queue, then one node (the first of the fixed order,
// the split-vote tie-break, or the last) is paused and A unlocks: a paused
// node delays no release, so Unlock returns nil well within go-redis's 3 s
// read timeout, and every waiter is granted in turn within a bound, with
// rising tokens.
func TestAtkQuorumWaitersNodePaused(t *testing.T) {
	for _, c := range []struct{ waiters, paused int }{{1, 0}, {2, 0}, {2, 2}} {
		t.Run(fmt.Sprintf("%d waiters, node %d paused", c.waiters, c.paused), func(t *testing.T) {
			ctx := atkCtx(t)
			srvs := aqNodes(t, 3)
			a := aqQuorum(t, aqDirect(srvs))
			la, err := a.Lock(ctx, "paused")
			if err != nil {
				t.Fatal(err)
			}
			type got struct {
				l   *rlock.Lock
				err error
			}
			res := make(chan got, c.waiters)
			for i := 0; i < c.waiters; i++ {
				w := aqQuorum(t, aqDirect(srvs))
				go func() {
					l, err := w.Lock(ctx, "paused")
					res <- got{l, err}
				}()
			}
			time.Sleep(500 * time.Millisecond) // queued (or holding a node A's hold missed)
			srvs[c.paused].Pause()
			t.Cleanup(srvs[c.paused].Resume)
			start := time.Now()
			err = la.Unlock(ctx)
			if took := time.Since(start); err != nil || took > 2*time.Second {
				t.Errorf("A's Unlock took %v: %v", took, err)
			}
			last := la.Token()
			for i := 0; i < c.waiters; i++ {
				select {
				case g := <-res:
					if g.err != nil {
						t.Fatal(g.err)
					}
					if g.l.Token() <= last {
						t.Fatalf("token %d after %d", g.l.Token(), last)
					}
					last = g.l.Token()
					if err := g.l.Unlock(ctx); err != nil {
						t.Errorf("waiter's Unlock: %v", err)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("waiter %d of %d not granted 10 s after the release, node %d paused", i+1, c.waiters, c.paused)
				}
			}
		})
	}
}
