package rlock

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// The attacks on a node that joins a hold late (joinLate, finishRaise) and
// on the release of such a node (see release).

// isStopped says whether Close has begun: every clean-up run after it
// runs inline, on its caller's goroutine.
func (cs *cleanups) isStopped() bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.stopped
}

// Close begins while a TryLock's round 1 is under way, its replies held
// back at the proxies: once they come, the look goes on with every
// clean-up inline (Close has begun), its round 2's raises too, so the
// third node's raise is answered after commit stopped listening, on the
// look's own goroutine. Its handler must not wait there for the look to
// return: TryLock returns, and leaves nothing.
func TestAttackQuorumCloseBeforeRoundTwo(t *testing.T) {
	ctx := testCtx(t)
	srvs := startNodes(t, 3)
	c, pxs := quorumBehindProxies(t, ctx, srvs, 0)
	var send []func()
	for _, px := range pxs {
		send = append(send, px.HoldNextReply(isScript("acquire")))
	}
	done := make(chan error, 1)
	go func() {
		l, err := c.TryLock(ctx, "closing")
		if err == nil {
			err = errors.Join(errors.New("TryLock held after Close"), l.Unlock(ctx))
		}
		done <- err
	}()
	require.Eventually(t, func() bool { return pxs[0].Taken() && pxs[1].Taken() && pxs[2].Taken() },
		5*time.Second, time.Millisecond, "round 1 never reached the nodes")
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	require.Eventually(t, c.background.isStopped, 5*time.Second, time.Millisecond)
	for _, f := range send {
		f()
	}
	select {
	case err := <-done:
		require.ErrorIs(t, err, ErrClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("TryLock still running 10 s after its round 1 was answered (Close had begun)")
	}
	require.NoError(t, <-closed)
	requireNothingLeftOnNodes(t, ctx, srvs, "closing")
}

// setFences sets the lock's counter on each node to fenceBase plus the
// given offset, so that its grants differ (a quorum's counters drift
// apart: a node down for some holds) and are known in advance: tokens
// follow the server clock, in µs, unless a counter is ahead of it, as
// fenceBase, in 2112, is.
func setFences(t *testing.T, ctx context.Context, srvs []*redistest.Server, name string, offsets ...uint64) {
	t.Helper()
	for i, o := range offsets {
		require.NoError(t, admin(t, srvs[i]).Set(ctx, lockKey(name)+":fence", fenceBase+o, 0).Err())
	}
}

// fenceBase is setFences' counter, far ahead of the clock (2^52 µs).
const fenceBase = uint64(1) << 52

// tokenAt is the token fenceBase+o as a script's argument prints it.
func tokenAt(o uint64) string { return strconv.FormatUint(fenceBase+o, 10) }

// isRaise matches a quorum-raise from token from to token to (its first
// two arguments after the owner).
func isRaise(from, to string) func(cmd []string) bool {
	raise, owner := isScript("quorum-raise"), 3+scriptShapes["quorum-raise"][0]
	return func(cmd []string) bool { return raise(cmd) && cmd[owner+1] == from && cmd[owner+2] == to }
}

// A copy of a joining node's raise that is late on the network (its client
// gave up on it, and its resend was answered) reaches the node after the
// hold's release: one WithOwner owner, l1 on c1 and l2 on c2.
//
//  1. l1 is granted 11, 11 and 5 (node 2's counter lags; tokens here are
//     offsets from fenceBase) and commits 11 on nodes 0 and 1; its raise
//     of node 2 (5 → 11) is held on the wire.
//  2. l1 unlocks: nodes 0 and 1 are free.
//  3. l2 takes nodes 0 and 1 (token 12). Where node 2 is still l1's (its
//     release waits for the raise), l2 re-enters it under 5 (count 2),
//     not its hold's, and its give-back there is held on the wire.
//  4. l1's raise times out; its resend finds the count 2, raises nothing,
//     and gives l1's count back by 5: the count left is l2's, under 5.
//  5. The first raise reaches node 2: with the count 1 and the ID 5, it
//     raises l2's count to 11. l2's give-back by 5 then finds nothing, and
//     l2's Unlock goes by 12: an owner's count stays on node 2 for a lease.
//
// A release that settles node 2 itself before l2 looks (step 2) leaves l2
// a new grant there; the copy must still change nothing when it comes.
func TestAttackQuorumLateRaiseCopy(t *testing.T) {
	ctx := testCtx(t)
	srvs := startNodes(t, 3)
	_, pxs := quorumBehindProxies(t, ctx, srvs, 0) // loads the scripts
	noRetry := func(o *redis.Options) { o.MaxRetries = -1 }
	// l1's raise is resent once its read timed out: 3 s, for steps 2 and
	// 3 to come first however loaded the machine. l2's give-back must not
	// be resent while the test holds it.
	c1 := quorumThrough(t, pxs, noRetry, func(o *redis.Options) { o.ReadTimeout = 3 * time.Second })
	c2 := quorumThrough(t, pxs, noRetry, func(o *redis.Options) { o.ReadTimeout = 30 * time.Second })
	const name = "late-copy"
	octx := WithOwner(ctx, "owner-late-copy")
	setFences(t, ctx, srvs, name, 10, 10, 4)

	sendRaise, raised := pxs[2].HoldNextCommand(isRaise(tokenAt(5), tokenAt(11)))
	l1, err := c1.Lock(octx, name)
	require.NoError(t, err)
	require.Equal(t, fenceBase+11, l1.Token())
	require.Eventually(t, pxs[2].Taken, 5*time.Second, time.Millisecond, "l1's raise of node 2 never sent")
	require.NoError(t, l1.Unlock(ctx))

	sendGiveBack, gaveBack := pxs[2].HoldNextCommand(isRaise(tokenAt(5), tokenAt(5)))
	l2, err := c2.TryLock(octx, name)
	require.NoError(t, err)
	require.Equal(t, fenceBase+12, l2.Token(), "l2 re-entered no hold: nodes 0 and 1 were free")
	count := func() string { return admin(t, srvs[2]).HGet(ctx, lockKey(name), l1.Owner()).Val() }
	// l1's count goes: "1" left is l2's re-entry, under 5, its give-back
	// held; none, where l1's release raised node 2 to 11 before l2
	// re-entered it (then under 11, a give-back the proxy lets through).
	require.Eventually(t, func() bool { return count() != "2" }, 10*time.Second, 5*time.Millisecond,
		"node 2 still holds l1's count beside l2's")
	sendRaise()
	requireClosed(t, raised, "l1's first raise of node 2 ran")
	sendGiveBack()
	if pxs[2].Taken() { // l2 re-entered node 2 (step 3)
		requireClosed(t, gaveBack, "l2's give-back on node 2 ran")
	}
	require.NoError(t, l2.Unlock(ctx))
	requireNothingLeftOnNodes(t, ctx, srvs, name)
}

// requireClosed waits up to 10 s for ch to close.
func requireClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("not within 10 s: %s", what)
	}
}

// A joining node is needed for the Unlock's majority: node 2's raise reply
// is lost (the client waits out its read timeout, 10 s), and node 1 is
// cut off after the Lock. Nodes 0 and 2 answer, so the Unlock holds within
// a round trip or two; waiting for the lost reply takes the read timeout.
func TestAttackQuorumUnlockBehindLostRaise(t *testing.T) {
	ctx := testCtx(t)
	srvs := startNodes(t, 3)
	_, pxs := quorumBehindProxies(t, ctx, srvs, 0)
	c := quorumThrough(t, pxs, func(o *redis.Options) { o.MaxRetries, o.ReadTimeout = -1, 10*time.Second })
	const name = "lost-raise"
	setFences(t, ctx, srvs, name, 10, 10, 4)
	pxs[2].DropNextReply(isRaise(tokenAt(5), tokenAt(11)), false)
	l, err := c.Lock(ctx, name)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return pxs[2].Dropped() == 1 }, 5*time.Second, time.Millisecond)
	pxs[1].Blackhole()
	// 3 s: ms of work, beside the 10 s of the lost reply, with room for
	// the load of the suite.
	uctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	require.NoError(t, l.Unlock(uctx), "Unlock with nodes 0 and 2 answering")
	pxs[1].Restore()
	requireNothingLeftOnNodes(t, ctx, srvs, name)
}
