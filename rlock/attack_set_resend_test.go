package rlock

// Outside attack on the multi-lock: a set script that queued its waiter,
// resent by go-redis after the member it queued at was granted to it.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAttackLockSetResentAfterGrant: the reply of the set script that took
// the first member and queued the set at the second is held past go-redis's
// read timeout; meanwhile the second's holder unlocks, which grants it to
// the set's waiter; go-redis resends the script, whose replay (an owner
// made for the call finding its own holds) counts the granted member as
// taken. The set returns holding both: no give-back of the grant may then
// release the member under the set's live Context.
func TestAttackLockSetResentAfterGrant(t *testing.T) {
	ctx, srv := serve(t)
	c, px := resendClient(ctx, t, srv)
	warmGrantLine(ctx, t, c)
	warmSetScripts(ctx, t, c)
	names := inOrder(t, c, "rg-a", "rg-b")
	x, other := newClient(t, srv), newClient(t, srv)
	xl, err := x.Lock(ctx, names[1])
	require.NoError(t, err)
	release := px.HoldNextReply(queuingSetShape(len(names)))
	defer release()
	start := time.Now()
	got := lockAllInBackground(ctx, c, names)
	waitForQueued(t, srv, names[1], 1)
	require.NoError(t, xl.Unlock(ctx))
	o := receiveSet(t, got)
	require.NoError(t, o.err)
	defer o.s.Unlock(ctx)
	owner := o.s.members[0].hold.owner
	t.Logf("the set returned after %v", time.Since(start))
	for i := 0; i < 20; i++ {
		st, err := c.Inspect(ctx, names[1])
		require.NoError(t, err)
		if o.s.Context().Err() == nil && st.Holders[owner] != 1 {
			l, terr := other.TryLock(ctx, names[1])
			if terr == nil {
				defer l.Unlock(ctx)
			}
			t.Fatalf("two holders of %s: the set's Context is live, Redis holders %v, another client's TryLock: %v", names[1], st.Holders, terr)
		}
		time.Sleep(25 * time.Millisecond)
	}
}
