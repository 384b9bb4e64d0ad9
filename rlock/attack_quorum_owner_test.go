package rlock_test

import (
	"context"
	"testing"

	"github.com/batonlock/baton/rlock"
)

// One WithOwner owner across two quorum Clients is one owner: the second
// Lock re-enters the first's hold, keeps its token, and the two Unlocks
// free the lock, each answered nil, leaving nothing on any node.
func TestAtkQuorumSharedOwnerTwoClients(t *testing.T) {
	t.Skip("finding 3: with one WithOwner owner on two quorum Clients, the second Lock gets a new token, the first's Unlock says ErrLockLost (not held) while every node holds it, and a count stays on a majority for the lease; fails on a578abb")
	ctx := atkCtx(t)
	srvs := aqNodes(t, 3)
	q1 := aqQuorum(t, aqDirect(srvs))
	q2 := aqQuorum(t, aqDirect(srvs))
	octx := rlock.WithOwner(ctx, "shared")
	l1, err := q1.Lock(octx, "owner")
	if err != nil {
		t.Fatal(err)
	}
	l2, err := q2.Lock(octx, "owner")
	if err != nil {
		t.Fatal(err)
	}
	if l2.Token() != l1.Token() {
		t.Errorf("one owner's one hold, two tokens: %d, then %d", l1.Token(), l2.Token())
	}
	for i, l := range []*rlock.Lock{l1, l2} {
		if err := l.Unlock(ctx); err != nil {
			t.Errorf("Unlock %d: %v (Context: %v); on the nodes: %s", i+1, err, context.Cause(l.Context()), aqLeft(ctx, srvs, "owner"))
		}
	}
	aqRequireClean(t, srvs, "owner", "after both Unlocks")
}
