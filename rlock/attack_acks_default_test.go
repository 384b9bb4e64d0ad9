package rlock_test

// Attacks on replica acknowledgements from the outside, issue 31: the
// default (no WithReplicaAcks) across a failover, and the semaphore's size
// across one. Helpers in attack_acks_test.go, attack_acks_failover_test.go
// and attack_helpers_test.go.

import (
	"errors"
	"testing"
	"time"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/rlock"
)

// "Counts are read at New, again every second and after a reconnect or a
// failed acknowledgement, so a failover or a new replica is seen within
// about a second." A default client on Sentinel: its master has a replica,
// so grants wait for it; the master dies and the replica, promoted, has
// none, so grants must go through again soon; a replica of the new master
// then starts (and is stopped), so grants must wait for it again: Lock
// fails with ErrNotReplicated within a few seconds, instead of granting
// without an acknowledgement that a later failover would need.
func TestAttackAcksDefaultFollowsTheFailover(t *testing.T) {
	ctx := atkCtx(t)
	s := redistest.StartSentinel(t, redistest.WithLaggingReplica())
	c := atkSentinelClient(t, s)
	s.Relay.Hold()
	if l, err := c.Lock(ctx, "before"); err == nil {
		_ = l.Unlock(ctx)
		t.Fatal("the default granted with its master's replica held back")
	} else {
		atkRequireNotReplicated(t, "before the failover", err)
	}
	atkLoseTheMaster(s)
	promoted := time.Now()
	lockUntil := func(what string, done func(error) bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			l, err := c.Lock(ctx, "after")
			if l != nil {
				_ = l.Unlock(ctx)
			}
			if done(err) {
				t.Logf("%s %v after the promotion", what, time.Since(promoted))
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 5 s (last: %v)", what, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	lockUntil("grants go through on the promoted replica, which has none", func(err error) bool { return err == nil })
	added := redistest.StartReplica(t, s.Master)
	atkPause(t, added)
	lockUntil("grants wait for the new master's stopped replica", func(err error) bool {
		return errors.Is(err, rlock.ErrNotReplicated)
	})
}

// A semaphore's size decides how many permits may be held at once, and
// "SetSize sets the semaphore's size in Redis, for every client". A
// SetSize lowering the size to 1, confirmed while the replica lags, is lost
// when the master dies: on the promoted replica the size is 2 again, and
// two Acquires of 1 hold at once, each acknowledged, although the size
// was confirmed as 1 and no permit was held when it was set. Grants are
// acknowledged so that they survive a failover; the size they are judged
// by is not.
func TestAttackAcksSetSizeLostInAFailover(t *testing.T) {
	ctx := atkCtx(t)
	_, a := atkSetSizeHeldBack(t)
	// Unacknowledged, the size must not be confirmed: a failover would
	// lose it, and two permits would be held under a size confirmed as 1.
	err := a.Semaphore(atkPool, 2).SetSize(ctx, 1)
	if !errors.Is(err, rlock.ErrNotReplicated) {
		t.Fatalf("SetSize with no replica acknowledging it: got %v, want ErrNotReplicated", err)
	}
}

// The control of TestAttackAcksSetSizeLostInAFailover: the same sequence
// with acknowledgements off confirms the size of 1, and after the failover
// two Acquires of 1 hold at once. If they do not, the attack tests nothing.
func TestSetSizeLostInAFailoverWithoutAcks(t *testing.T) {
	ctx := atkCtx(t)
	s, a := atkSetSizeHeldBack(t, rlock.WithReplicaAcks(0, 0))
	if err := a.Semaphore(atkPool, 2).SetSize(ctx, 1); err != nil {
		t.Fatalf("SetSize, unacknowledged: %v", err)
	}
	atkLoseTheMaster(s)
	b := atkSentinelClient(t, s, rlock.WithReplicaAcks(0, 0))
	for i := range 2 {
		p, err := b.Semaphore(atkPool, 1).TryAcquire(ctx, 1, rlock.WaitAtMost(time.Second))
		if err != nil {
			t.Fatalf("Acquire %d of 1 on the promoted replica: %v; want the size of 2 the failover kept", i+1, err)
		}
		defer p.Release(ctx)
	}
}

// atkPool is the semaphore of the SetSize attack.
const atkPool = "pool"

// atkSetSizeHeldBack starts a Sentinel whose replica lags and a Client
// with opts on it, which has stored atkPool's size of 2 on both; the relay
// then holds the replica's stream.
func atkSetSizeHeldBack(t *testing.T, opts ...rlock.Option) (*redistest.Sentinel, *rlock.Client) {
	t.Helper()
	ctx := atkCtx(t)
	s := redistest.StartSentinel(t, redistest.WithLaggingReplica())
	a := atkSentinelClient(t, s, opts...)
	p, err := a.Semaphore(atkPool, 2).Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// The replica must have the release before the relay holds the stream
	// (with acknowledgements off nothing waited for it): otherwise the
	// promoted replica still counts that permit, and the control finds one
	// free permit where the failover kept two (it failed so under load).
	if n, err := s.Master.Admin().Do(ctx, "WAIT", 1, 5000).Int64(); err != nil || n != 1 {
		t.Fatalf("WAIT for the replica before holding its stream: %d, %v", n, err)
	}
	s.Relay.Hold()
	return s, a
}
