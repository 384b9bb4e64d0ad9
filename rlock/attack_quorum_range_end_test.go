package rlock

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/reentrant"
)

// Every node's counter for a name at MaxToken: a quorum TryLock, Lock and
// a waiter behind a hold that runs out fail, and each error matches
// ErrTokenOverflow, as every refusing script's error does (as well as
// ErrNoQuorum: each node counts as failed). Before, it matched
// ErrNoQuorum only, every run.
func TestAttackQuorumRangeEndErrorMatches(t *testing.T) {
	ctx := testCtx(t)
	srvs := startNodes(t, 3)
	q := newQuorumClient(t, srvs, WithWatchdogLease(300*time.Millisecond))
	w := newQuorumClient(t, srvs, WithWatchdogLease(300*time.Millisecond))
	held, err := q.Lock(ctx, "held")
	require.NoError(t, err)
	for _, name := range []string{"free", "held"} {
		for _, s := range srvs {
			require.NoError(t, admin(t, s).Set(ctx, lockKey(name)+":fence", fmt.Sprint(reentrant.MaxToken), 0).Err())
		}
	}
	check := func(what string, l *Lock, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: a hold with token %d", what, l.Token())
			_ = l.Unlock(ctx)
			return
		}
		if !errors.Is(err, ErrTokenOverflow) || !errors.Is(err, ErrNoQuorum) {
			t.Errorf("%s: %v; want an error matching ErrTokenOverflow and ErrNoQuorum", what, err)
		}
	}
	l, err := q.TryLock(ctx, "free")
	check("TryLock of a free lock", l, err)
	l, err = q.Lock(ctx, "free")
	check("Lock of a free lock", l, err)
	l, err = w.Lock(ctx, "held", WaitAtMost(10*time.Second))
	check("a waiter behind a hold that ran out", l, err)
	_ = held.Unlock(ctx)
	requireNothingLeftOnNodes(t, ctx, srvs, "free")
	requireNothingLeftOnNodes(t, ctx, srvs, "held")
}
