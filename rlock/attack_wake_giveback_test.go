package rlock

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// wkShortRead is a 1 s read timeout without retries: one wait for a
// paused node is 1 s.
func wkShortRead(o *redis.Options) { o.ReadTimeout, o.MaxRetries = time.Second, -1 }

// isAnyScript matches any script call.
func isAnyScript(cmd []string) bool { return cmd[0] == "evalsha" || cmd[0] == "eval" }

// The woken waiter goes, and gives back what its look took.
//
// A holds on all 3 nodes; node 0 is paused; W1, then W2 (each its own
// Client, 60 s lease: a periodic look is 20 s away; a 1 s read timeout
// without retries, so one wait for node 0 is 1 s) wait: recorded on nodes
// 1 and 2, W1 the oldest, and their first look has failed on node 0, so
// their later looks do not wait for it. W1 and W2 reach the nodes through
// proxies. The proxies hold back the replies of W1's next script call on
// nodes 1 and 2 (its look after the wake-up), W2's links to nodes 1 and 2
// are held (blackholed) until W1's look has run there (then W2's look,
// if it is woken, finds W1's grants), and A unlocks: the release
// frees nodes 1 and 2 and wakes their oldest live record, W1's (or W2's
// on a node W1 has none). W1's look runs there and takes nodes 1 and 2,
// but W1 hears nothing back; W1's ctx is cancelled, then the replies come,
// and W1 gives back the grants its look took (README: "a give-back of a
// grant a look could not keep wakes nobody"). Nodes 1 and 2 are now free:
// a majority. W2 must be granted within one wait for the paused node
// (README "Waiting": 6.1 s at most; bound 9 s): a waiter whose node pauses
// after its look still hears the releases of the others.
func TestAttackWakeGivebackAfterCancelWakesNobody(t *testing.T) {
	ctx := testCtx(t)
	srvs := startNodes(t, 3)
	const name = "wk-giveback"
	la := lockOnAll(t, ctx, newQuorumClient(t, srvs), srvs, name)
	pxs := proxiesTo(t, srvs)
	nodes := make([]redis.UniversalClient, 3)
	for i, p := range pxs {
		nodes[i] = p.client(t, wkShortRead)
	}
	c1 := quorumOf(t, nodes, WithWatchdogLease(wkSlowLease))
	pxs2 := proxiesTo(t, srvs)
	nodes2 := make([]redis.UniversalClient, 3)
	for i, p := range pxs2 {
		nodes2[i] = p.client(t, wkShortRead)
	}
	c2 := quorumOf(t, nodes2, WithWatchdogLease(wkSlowLease))
	res := make(chan wkGot, 2)
	ctx1, cancel1 := context.WithCancel(ctx)
	defer cancel1()
	srvs[0].Pause()
	t.Cleanup(srvs[0].Resume)
	wkLock(ctx1, c1, name, 1, res)
	time.Sleep(300 * time.Millisecond)
	wkLock(ctx, c2, name, 2, res)
	// Each waiter's first look waits for node 0 up to its read timeout
	// (1 s, no retry) and fails there; its next look does not wait for it.
	time.Sleep(2500 * time.Millisecond)
	t.Logf("waiting, node 0 paused: %s", wkLeft(ctx, srvs[1:], name))
	release1 := pxs[1].HoldNextReply(isAnyScript)
	release2 := pxs[2].HoldNextReply(isAnyScript)
	t.Cleanup(release1)
	t.Cleanup(release2)
	// W2 hears nothing until W1's look has run.
	for _, p := range pxs2[1:] {
		p.Blackhole()
		t.Cleanup(p.Restore)
	}
	unlockAt := time.Now()
	if err := la.Unlock(ctx); err != nil {
		t.Fatalf("A's Unlock: %v", err)
	}
	time.Sleep(300 * time.Millisecond) // W1's look ran on nodes 1 and 2
	t.Logf("W1's look held back: %s", wkLeft(ctx, srvs[1:], name))
	for _, p := range pxs2[1:] {
		p.Restore()
	}
	time.Sleep(300 * time.Millisecond) // W2's look, if woken, found W1's grants
	t.Logf("W2 heard: %s", wkLeft(ctx, srvs[1:], name))
	cancel1()
	time.Sleep(50 * time.Millisecond)
	release1()
	release2()
	_, w2, from := wkAwaitSecond(t, ctx, srvs, name, res, unlockAt, 22*time.Second, func(g wkGot) {
		if err := g.l.Unlock(ctx); err != nil {
			t.Errorf("W1's Unlock: %v", err)
		}
	}, "W1's look held back, W1 cancelled")
	if w2.err != nil {
		t.Fatalf("W2: %v", w2.err)
	}
	t.Logf("W2 granted %v after the last release", w2.at.Sub(from))
	if err := w2.l.Unlock(ctx); err != nil {
		t.Errorf("W2's Unlock: %v", err)
	}
	srvs[0].Resume()
	requireNothingLeftOnNodes(t, ctx, srvs, name)
}
