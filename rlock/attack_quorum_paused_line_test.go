package rlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/batonlock/baton/rlock"
)

// A quorum Client C that never waited has no grant line kept on any node.
// With node 2 of 3 paused, C's Lock of a lock another Client holds
// subscribes there, and its subscription waits for node 2 up to its read
// timeout. Meanwhile C's Lock of a free name, with a 2 s deadline, must be
// granted by the two nodes up ("one node of 3 down: locks still work"),
// in a few ms. Outside attack 8: the first Lock after one owner's calls
// returned ErrNotObtained about 5 s in, past its deadline, 4 of 4 runs:
// its check that a node's grant line was up (no round trip) waited for
// the line's mutex, which the other call's subscription held across its
// wait for node 2.
func TestAttackQuorumLockBesideSubscribeToPausedNode(t *testing.T) {
	ctx := atkCtx(t)
	srvs := aqNodes(t, 3)
	h := aqQuorum(t, aqDirect(srvs))
	c := aqQuorum(t, aqDirect(srvs))
	l, err := c.Lock(ctx, "warm")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	held, err := h.Lock(ctx, "held")
	if err != nil {
		t.Fatal(err)
	}
	srvs[2].Pause()
	t.Cleanup(srvs[2].Resume)
	wctx, stop := context.WithCancel(ctx)
	waiting := make(chan error, 1)
	go func() {
		_, err := c.Lock(wctx, "held")
		waiting <- err
	}()
	// C's waiter first looks, which waits for node 2 (no majority
	// answered: h holds nodes 0 and 1) up to the read timeout and its
	// retry; then it subscribes on every node, queues on node 0 once nodes
	// 0 and 1 have answered, and goes on subscribing on node 2.
	queue := srvs[0].Admin()
	for queue.LLen(ctx, atkQueue("lock", "held")).Val() != 1 {
		if ctx.Err() != nil {
			t.Fatal("C's waiter never queued on node 0")
		}
		time.Sleep(5 * time.Millisecond)
	}
	lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	start := time.Now()
	free, err := c.Lock(lctx, "free", rlock.WithLease(3*time.Second))
	if err != nil {
		t.Errorf("Lock of a free name beside a subscribe to paused node 2: %v after %v", err, time.Since(start))
	} else {
		t.Logf("granted after %v", time.Since(start))
		if err := free.Unlock(ctx); err != nil {
			t.Error(err)
		}
	}
	stop()
	<-waiting
	if err := held.Unlock(ctx); err != nil {
		t.Error(err)
	}
}
