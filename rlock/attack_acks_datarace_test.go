package rlock_test

// Attacks on replica acknowledgements from the outside, issue 31: the
// clean-ups of a hand-off grant that no replica acknowledged, while Redis
// does not answer. Helpers in attack_acks_test.go and
// attack_helpers_test.go.

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/rlock"
)

// "A grant not acknowledged is given back before Lock returns
// ErrNotReplicated", and a call that gave up "has left the queue when it
// returns (unless Redis did not answer its leave within 250 ms: the leave
// then goes on in the background)". W waits on a client whose requests a
// proxy holds back from the moment H releases to W (found first in
// TestAttackAcksFailoverDuringHandOffAck, where the master died instead):
// the grant message reaches W, its acknowledgement fails (a read timeout),
// the give-back of the grant cannot be sent either, and W's leave follows
// it while it is still trying. Both go on in the background on the same
// call, and both must be safe to run at once (go test -race), and once
// Redis answers again the lock must pass on to C, queued behind W.
func TestAttackAcksGiveBackAndLeaveWhileRedisIsAway(t *testing.T) {
	ctx := atkCtx(t)
	srv, replica := atkReplicated(t)
	rdb := srv.Admin()
	// No resend and a 1 s read timeout: each of W's commands fails once,
	// within the test's time; the acknowledgement timeout is below it.
	prx, w := atkProxied(t, srv, func(o *redis.Options) { o.ReadTimeout, o.MaxRetries = time.Second, -1 },
		rlock.WithReplicaAcks(1, 500*time.Millisecond))
	h, c := atkUnacked(t, srv), atkUnacked(t, srv)
	const name = "away"
	l, err := h.Lock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	got := atkTakeInBackground(ctx, w, "lock", name)
	atkWaitLen(t, rdb, atkQueue("lock", name), 1)
	behind := atkTakeInBackground(ctx, c, "lock", name)
	atkWaitLen(t, rdb, atkQueue("lock", name), 2)
	atkPause(t, replica)
	prx.HoldRequests()
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r := atkAwaitTaken(t, got, "W's Lock")
	if r.err == nil {
		_ = r.end()
		t.Fatal("W was granted with its requests held back and its replica stopped")
	}
	t.Logf("W's Lock: %v", r.err)
	time.Sleep(1500 * time.Millisecond) // the give-back's first try times out
	prx.ReleaseRequests()
	atkWokenSoon(t, behind, time.Now(), rdb, atkResourceKey("lock", name))
}
