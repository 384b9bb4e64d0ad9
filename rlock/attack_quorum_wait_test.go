package rlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/bench"
	"github.com/batonlock/baton/bench/redistest"
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
			la := rlock.LockOnAll(t, ctx, aqQuorum(t, aqDirect(srvs)), srvs, "paused")
			res := make(chan aqGot, c.waiters)
			for i := 0; i < c.waiters; i++ {
				aqWait(ctx, aqQuorum(t, aqDirect(srvs)), "paused", res)
			}
			time.Sleep(500 * time.Millisecond) // queued
			srvs[c.paused].Pause()
			t.Cleanup(srvs[c.paused].Resume)
			start := time.Now()
			err := la.Unlock(ctx)
			if took := time.Since(start); err != nil || took > 2*time.Second {
				t.Errorf("A's Unlock took %v: %v", took, err)
			}
			within := []time.Duration{10 * time.Second, 10 * time.Second}[:c.waiters]
			aqTakeTurns(t, ctx, res, start, la.Token(), within, c.paused)
		})
	}
}

// The split of TestAtkQuorumWaitersNodePaused's two waiters, made sure: A
// holds on 3 nodes, waiter 1 reaches node 2 and waiter 2 reaches node 1
// through a proxy 100 ms each way, both wait, node 0 (the one they wait
// on) is paused and A unlocks. A's release wakes the oldest wake record
// on each of nodes 1 and 2 (each waiter's record reached its near node
// first), each waiter's look takes its near node (a split, with node 0
// down), neither has a majority, and each waits for node 0: go-redis's
// read timeout is 3 s, and a read that timed out is retried once (5 s
// measured, at most 2 × 3 s). The waiter keeping node 1 looks again at
// once, queued on node 2, which the other gives back (it may take it
// once more first: then that give-back grants it to the keeper), with no
// wait for node 0, which failed its last look. So the first holder needs
// one wait for node 0 (6 s; 2 s more for a loaded machine: 8 s), and the
// second none, as its last look saw node 0 fail: its looks cost round
// trips of 200 ms on its slow link, and 3 s (one read timeout) is short
// of any wait for node 0. Without
// a wake-up the first look comes a third of a lease (10 s) after the
// last, and a look that waits for node 0 each time a split is tried again
// takes 5 s a try.
func TestAtkQuorumWaitersSplitNodePaused(t *testing.T) {
	ctx := atkCtx(t)
	srvs := aqNodes(t, 3)
	la := rlock.LockOnAll(t, ctx, aqQuorum(t, aqDirect(srvs)), srvs, "split-paused")
	res := make(chan aqGot, 2)
	for _, far := range []int{2, 1} {
		slow, err := bench.StartDelayProxy(srvs[far].Addr, 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = slow.Close() })
		rdbs := aqDirect(srvs)
		o := redistest.Options(slow.Addr)
		rdbs[far] = redis.NewClient(o)
		t.Cleanup(func() { _ = rdbs[far].Close() })
		aqWait(ctx, aqQuorum(t, rdbs), "split-paused", res)
		time.Sleep(50 * time.Millisecond) // the waiters' looks reach each node in turn
	}
	time.Sleep(time.Second) // both queued on node 0
	srvs[0].Pause()
	t.Cleanup(srvs[0].Resume)
	from := time.Now()
	if err := la.Unlock(ctx); err != nil {
		t.Fatalf("A's Unlock: %v", err)
	}
	aqTakeTurns(t, ctx, res, from, la.Token(), []time.Duration{8 * time.Second, 3 * time.Second}, 0)
}

// aqGot is a waiter's Lock: its lock, or its error.
type aqGot struct {
	l   *rlock.Lock
	err error
}

// aqWait starts c's Lock of name; its result comes on res.
func aqWait(ctx context.Context, c *rlock.Client, name string, res chan<- aqGot) {
	go func() {
		l, err := c.Lock(ctx, name)
		res <- aqGot{l, err}
	}()
}

// aqTakeTurns takes each waiter's grant off res in turn, the i-th within
// within[i] of the release before it (the one at from for the first),
// checks that tokens rise from last, and unlocks it.
func aqTakeTurns(t *testing.T, ctx context.Context, res <-chan aqGot, from time.Time, last uint64, within []time.Duration, paused int) {
	t.Helper()
	for i, bound := range within {
		select {
		case g := <-res:
			if g.err != nil {
				t.Fatal(g.err)
			}
			t.Logf("waiter %d granted %v after the release before it", i+1, time.Since(from))
			if g.l.Token() <= last {
				t.Fatalf("token %d after %d", g.l.Token(), last)
			}
			last = g.l.Token()
			if err := g.l.Unlock(ctx); err != nil {
				t.Errorf("waiter's Unlock: %v", err)
			}
			from = time.Now()
		case <-time.After(bound):
			t.Fatalf("waiter %d of %d not granted %v after the release before it, node %d paused", i+1, len(within), bound, paused)
		}
	}
}
