package rlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/rlock"
)

// Outside attack 10: a ForceUnlock whose copy to node 2 is delayed on
// the network (held in a proxy; go-redis times out and resends, both
// copies held) returns once a majority has decided it. A's part on node 2
// then runs out, node 0 is paused while B locks, so B holds nodes 1 and 2
// only (a bare majority, as the README allows), and the held copies are
// let through. D's TryLock must fail while B's Context is live. With a
// plain force release the copies deleted B's part on node 2 and D took
// nodes 0 and 2: two holders, every round; the force release now names
// the hold it read, which B's is not.
func TestAttackQuorumLateForceUnlockCopySparesTheNextHold(t *testing.T) {
	for round := range 3 {
		aqLateForce(t, round, true)
	}
}

// The same with no pause during B's Lock, so B's hold is on all 3 nodes:
// even a copy that took node 2 from it (as a plain force release did)
// leaves B a majority, and D is refused.
func TestAttackQuorumLateForceUnlockCopyControl(t *testing.T) {
	for round := range 3 {
		aqLateForce(t, round, false)
	}
}

func aqLateForce(t *testing.T, round int, pause bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srvs := aqNodes(t, 3)
	lease := 2 * time.Second
	mk := func() *rlock.Client { return aqQuorum(t, aqDirect(srvs), rlock.WithWatchdogLease(lease)) }
	a, b, d := mk(), mk(), mk()
	p := atkStartProxy(t, srvs[2].Addr)
	o := redis.Options{Addr: p.Addr(), ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond}
	r := redis.NewClient(&o)
	t.Cleanup(func() { r.Close() })
	f := aqQuorum(t, []redis.UniversalClient{srvs[0].Client(), srvs[1].Client(), r}, rlock.WithWatchdogLease(lease))
	if _, err := f.ForceUnlock(ctx, "warm"); err != nil { // load its script everywhere
		t.Fatal(err)
	}
	name := "lateforce"
	la, err := a.Lock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	p.HoldRequests()
	n, err := f.ForceUnlock(ctx, name)
	t.Logf("round %d: ForceUnlock with node 2's copy held: %d, %v", round, n, err)
	k := atkResourceKey("lock", name)
	atkAwait(t, "A's part on node 2 goes", func() bool { return srvs[2].Admin().Exists(ctx, k).Val() == 0 })
	t.Logf("A's Context: %v", la.Context().Err())
	if pause {
		srvs[0].Pause()
	}
	lb, err := b.Lock(ctx, name)
	if pause {
		srvs[0].Resume()
	}
	if err != nil {
		t.Fatalf("B: %v", err)
	}
	time.Sleep(100 * time.Millisecond)
	on := []int{}
	for i, s := range srvs {
		if s.Admin().Exists(ctx, k).Val() == 1 {
			on = append(on, i)
		}
	}
	t.Logf("B holds, token %d, on nodes %v", lb.Token(), on)
	p.ReleaseRequests()
	time.Sleep(50 * time.Millisecond)
	ld, err := d.TryLock(ctx, name)
	if err == nil {
		bl := lb.Context().Err()
		t.Errorf("round %d: TWO HOLDERS: D took the lock (token %d) while B (token %d) holds, B's Context err %v; the ForceUnlock had returned before B's Lock",
			round, ld.Token(), lb.Token(), bl)
		_ = ld.Unlock(ctx)
	} else {
		t.Logf("D: %v", err)
	}
	_ = lb.Unlock(ctx)
	_ = la.Unlock(ctx)
}
