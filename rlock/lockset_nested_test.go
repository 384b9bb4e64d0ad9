package rlock

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// A caller holding a set's first member (a Lock) takes a later member
// through that lock's Context, with Lock or LockAll, as the ordering rule
// allows, while another set waits for that first member: the caller must
// not wait for the waiting set, which waits for the caller. So a waiting
// set cannot be ahead of every later call on the members after the one it
// waits for: not of this one.
func TestLockAllNestedPastWaitingSet(t *testing.T) {
	for _, kind := range []string{"Lock", "LockAll"} {
		t.Run(kind, func(t *testing.T) {
			ctx, srv := serve(t)
			c := newClient(t, srv)
			names := inOrder(t, c, "n-a", "n-b", "n-c")
			l, err := c.Lock(ctx, names[0])
			require.NoError(t, err)
			other := newClient(t, srv)
			warmGrantLine(ctx, t, other)
			waiting := lockAllInBackground(ctx, other, []string{names[0], names[2]})
			waitForQueued(t, srv, names[0], 1)

			nested, cancel := context.WithTimeout(l.Context(), fast)
			defer cancel()
			if kind == "Lock" {
				m, err := c.Lock(nested, names[2])
				require.NoError(t, err, "the nested Lock waited for the set that waits for it")
				require.NoError(t, m.Unlock(ctx))
			} else {
				s, err := c.LockAll(nested, names)
				require.NoError(t, err, "the nested set waited for the set that waits for it")
				require.NoError(t, s.Unlock(ctx))
			}
			require.NoError(t, l.Unlock(ctx))
			require.NoError(t, receiveWholeSet(ctx, t, c, waiting, names[0], names[2]).Unlock(ctx))
			requireNothingLeft(ctx, t, c, admin(t, srv), names...)
		})
	}
}
