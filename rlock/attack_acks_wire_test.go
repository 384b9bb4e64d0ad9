package rlock_test

// Attacks on replica acknowledgements from the outside, issue 31: wire
// mode (Redisson's format), where waiters are woken by unlock messages and
// try again. Helpers in attack_acks_test.go and attack_helpers_test.go.

import (
	"context"
	"testing"
	"time"

	"github.com/batonlock/baton/rlock"
)

// "A grant not acknowledged is given back (the queue moves on)", in wire
// mode: a free acquire whose acknowledgement times out while another wire
// client waits for the lock. That waiter, woken by unlock messages, must be
// woken by the give-back, not left to retry at the lease's end (30 s).
func TestAttackAcksWireFailedAcquireWakesTheWaiter(t *testing.T) {
	ctx := atkCtx(t)
	srv, replica := atkReplicated(t)
	rdb := srv.Admin()
	const name = "wirefree"
	a := atkAcked(t, srv, rlock.WithRedissonWire(""))
	b := atkClient(t, srv, rlock.WithRedissonWire(""), rlock.WithReplicaAcks(0, 0))
	atkPause(t, replica)
	first := atkGo(ctx, func() (*rlock.Lock, error) { return a.Lock(ctx, name) })
	atkAwait(t, "A's grant is in Redis", func() bool { return rdb.Exists(ctx, name).Val() == 1 })
	behind := atkGo(ctx, func() (*rlock.Lock, error) { return b.Lock(ctx, name) })
	time.Sleep(100 * time.Millisecond) // B has found the lock held and waits
	r := atkAwaitTaken(t, first, "A's Lock")
	if r.err == nil {
		_ = r.end()
	}
	atkRequireNotReplicated(t, "A's grant", r.err)
	atkWokenSoon(t, behind, r.at, rdb, name)
}

// "A grant goes back once, with its own count", in wire mode: a re-entry
// (through the handle's Context, or by the same WithOwner owner on the same
// client) that no replica acknowledges is given back, and the first hold
// stays whole: a bystander stays out while its Context is alive.
func TestAttackAcksWireReentryGiveBack(t *testing.T) {
	for _, via := range []string{"context", "owner"} {
		t.Run(via, func(t *testing.T) {
			ctx := atkCtx(t)
			srv, replica := atkReplicated(t)
			const name = "wirere"
			a := atkAcked(t, srv, rlock.WithRedissonWire(""))
			c := atkClient(t, srv, rlock.WithRedissonWire(""), rlock.WithReplicaAcks(0, 0))
			octx := rlock.WithOwner(ctx, "7")
			l1, err := a.Lock(octx, name)
			if err != nil {
				t.Fatal(err)
			}
			reCtx := atkReentryCtx(via, octx, l1)
			resume := atkPause(t, replica)
			l2, err := a.Lock(reCtx, name)
			if l2 != nil {
				_ = l2.Unlock(ctx)
			}
			atkRequireNotReplicated(t, "the re-entry", err)
			resume()
			if err := l1.Context().Err(); err != nil {
				t.Fatalf("the first hold ended with the re-entry's give-back: %v", context.Cause(l1.Context()))
			}
			if l, err := c.TryLock(ctx, name); err == nil {
				_ = l.Unlock(ctx)
				t.Fatal("two holders: a bystander took the lock beside the first hold")
			}
			if err := l1.Unlock(ctx); err != nil {
				t.Fatalf("the first hold's Unlock: %v", err)
			}
			atkBystanderGetsIn(t, ctx, c, name, "the first hold's Unlock")
		})
	}
}
