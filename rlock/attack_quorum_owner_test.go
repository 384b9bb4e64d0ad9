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
	aqSharedOwner(t, false)
}

// The same where the first hold is on a bare majority: node 2 was paused
// while it was made, and gave its late grant back once resumed. The
// second Lock then finds the hold on nodes 0 and 1 (a re-entry there)
// and the lock free on node 2 (a new grant, whose token is above the
// hold's): it must re-enter the hold, not make a new one of the three
// grants, which would take the hold's ID away from the first Client on
// nodes 0 and 1.
func TestAtkQuorumSharedOwnerOnMajority(t *testing.T) {
	aqSharedOwner(t, true)
}

func aqSharedOwner(t *testing.T, onMajority bool) {
	ctx := atkCtx(t)
	srvs := aqNodes(t, 3)
	q1 := aqQuorum(t, aqDirect(srvs))
	q2 := aqQuorum(t, aqDirect(srvs))
	octx := rlock.WithOwner(ctx, "shared")
	if onMajority {
		srvs[2].Pause()
	}
	l1, err := q1.Lock(octx, "owner")
	if onMajority {
		srvs[2].Resume()
		aqRequireClean(t, srvs[2:], "owner", "node 2's late grant given back")
	}
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
