package rlock

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// A waiting quorum call's look is granted a node it cannot keep, and gives
// it back (Raise, then Release); its next look finds the same grant there:
// the call's owner (made for the call) holds it, so the acquire reports it
// (count 1, as a resent command would). Before the fix the look counted
// it, and made its hold on it and one other node; the give-back's release
// then took the node out of the hold, and another owner took the lock on
// it and the third node while the first's Context was live (two holders,
// 3 runs of 3 in each case). Seen as a hold lost with no fault in
// TestAttackWakeStormComeAndGo (2 runs of 20, with give-backs that wake).
//
// Here: plain holds A0 and A2 keep nodes 0 and 2; node 1's counter runs an
// hour ahead, so its token is the hold's (the raise does not move it, and
// the release of the give-back finds it). C's first look is granted node 1
// only; a proxy holds back the reply of either the give-back's raise (the
// give-back under way) or, the first look's reply there lost (no resend),
// the reply of its undo's replay (which finds the grant, and releases it).
// A0's release hands node 0 to C, whose next look runs; then the reply
// goes on. Once A2 ends, D's TryLock must fail while C's Context is live.
func TestAttackQuorumLookAdoptsGrantBeingGivenBack(t *testing.T) {
	const name = "adopt"
	acquire := func(cmd []string) bool {
		return strings.EqualFold(cmd[0], "evalsha") && len(cmd) > 3 && cmd[2] >= "4" && cmd[3] == lockKey(name) // 4 or 5 keys: the acquire (the raise has 3)
	}
	for _, c := range []struct {
		what string
		hold func(t *testing.T, px *proxy, lock func()) (release func())
	}{
		{"give-back's raise", func(t *testing.T, px *proxy, lock func()) func() {
			return holdReplyOf(t, px, lock, func(cmd []string) bool { // from = to
				return strings.EqualFold(cmd[0], "evalsha") && len(cmd) == 11 && cmd[3] == lockKey(name) && cmd[7] == cmd[8]
			})
		}},
		{"undo's replay", func(t *testing.T, px *proxy, lock func()) func() {
			px.DropNextReply(acquire, false)
			lock()
			require.Eventually(t, func() bool { return px.Taken() }, 5*time.Second, time.Millisecond, "C's first look on node 1")
			return holdReplyOf(t, px, func() {}, acquire)
		}},
	} {
		t.Run(c.what, func(t *testing.T) { adoptRound(t, name, c.hold) })
	}
}

// holdReplyOf holds back the reply of px's next command that match
// matches, calls lock, and returns once the reply has come, with the func
// that lets it go.
func holdReplyOf(t *testing.T, px *proxy, lock func(), match func(cmd []string) bool) (release func()) {
	release = px.HoldNextReply(match)
	t.Cleanup(release)
	lock()
	require.Eventually(t, func() bool { return px.Taken() }, 5*time.Second, time.Millisecond, "the command whose reply is held")
	return release
}

// adoptRound is TestAttackQuorumLookAdoptsGrantBeingGivenBack with the
// reply that hold holds back on node 1.
func adoptRound(t *testing.T, name string, hold func(t *testing.T, px *proxy, lock func()) (release func())) {
	ctx := testCtx(t)
	srvs := startNodes(t, 3)
	pxs := proxiesTo(t, srvs)
	c := quorumThrough(t, pxs, func(o *redis.Options) { o.MaxRetries, o.ReadTimeout = -1, 300*time.Millisecond })
	warm, err := c.Lock(ctx, "warm") // every script loaded: no NOSCRIPT after a held EVALSHA
	require.NoError(t, err)
	require.NoError(t, warm.Unlock(ctx))
	ahead := time.Now().Add(time.Hour).UnixMicro()
	require.NoError(t, admin(t, srvs[1]).Set(ctx, lockKey(name)+":fence", ahead, 0).Err())
	a0, err := newClient(t, srvs[0]).Lock(ctx, name)
	require.NoError(t, err)
	a2, err := newClient(t, srvs[2]).Lock(ctx, name)
	require.NoError(t, err)

	type got struct {
		l   *Lock
		err error
	}
	res := make(chan got, 1)
	release := hold(t, pxs[1], func() {
		go func() {
			l, err := c.Lock(ctx, name)
			res <- got{l, err}
		}()
	})
	require.NoError(t, a0.Unlock(ctx))
	var g got
	select {
	case g = <-res: // its look counted node 1, before the give-back's release
	case <-time.After(time.Second):
	}
	release()
	if g.l == nil && g.err == nil {
		select {
		case g = <-res:
		case <-time.After(5 * time.Second):
			t.Fatal("C not granted 5 s after the give-back went on")
		}
	}
	require.NoError(t, g.err)
	l := g.l
	// The give-back's release is a round trip or two after the held reply.
	time.Sleep(200 * time.Millisecond)
	require.NoError(t, a2.Unlock(ctx))
	if d, err := newQuorumClient(t, srvs).TryLock(ctx, name); err == nil {
		t.Fatalf("two holders: D took the lock (token %d) beside C (token %d, Context live: %v)",
			d.Token(), l.Token(), l.Context().Err() == nil)
	}
	require.NoError(t, l.Unlock(ctx))
	requireNothingLeftOnNodes(t, ctx, srvs, name)
}
