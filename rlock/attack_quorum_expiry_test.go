package rlock_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/batonlock/baton/rlock"
)

// Node 0's counter an hour ahead (its clock ran ahead), short leases
// (WithLease 20 ms) and pauses of 5 leases between holds, so any counter
// kept "two leases" by a node's own clock, rather than past its token's
// time, would be gone; once a hold's token came from node 0's counter,
// node 0 is paused. Tokens still rise from holder to holder.
func TestAtkQuorumTokensRiseAfterShortLeases(t *testing.T) {
	ctx := atkCtx(t)
	srvs := aqNodes(t, 3)
	a := aqQuorum(t, aqDirect(srvs))
	name := "expiry"
	ahead := uint64(time.Now().Add(time.Hour).UnixMicro())
	if err := srvs[0].Admin().Set(ctx, atkResourceKey("lock", name)+":fence", fmt.Sprint(ahead), time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	var last uint64
	take := func(what string) {
		t.Helper()
		l, err := a.Lock(ctx, name, rlock.WithLease(20*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		if l.Token() <= last {
			t.Fatalf("%s: token %d after %d (node 0's counter was set to %d)", what, l.Token(), last, ahead)
		}
		last = l.Token()
		_ = l.Unlock(ctx)
		time.Sleep(100 * time.Millisecond)
	}
	// Until a hold's token came from node 0's counter (its grant may come
	// after the call decided on nodes 1 and 2).
	for i := 0; last <= ahead; i++ {
		if i == 10 {
			t.Fatalf("no hold in 10 took node 0's counter (last token %d)", last)
		}
		take(fmt.Sprint("hold ", i, ", every node up"))
	}
	aqRequireClean(t, srvs, name, "after Unlock")
	srvs[0].Pause()
	t.Cleanup(srvs[0].Resume)
	for i := 0; i < 3; i++ {
		take(fmt.Sprint("hold ", i, " with node 0 paused"))
	}
}
