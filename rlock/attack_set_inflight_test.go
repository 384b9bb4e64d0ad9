package rlock

// Outside attack on the multi-lock: the set's wait ends while its script
// is in flight.

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestAttackLockSetEndsWithScriptInFlight: with ContextTimeoutEnabled (as
// README advises for Lock deadlines shorter than ReadTimeout), the set's
// ctx (or WaitAtMost) ends while its script, which took every member, is in
// flight; the reply comes 20 ms later. LockAll fails, and promises it then
// "holds nothing and has left every queue when it returns (unless Redis
// did not answer within 250 ms)": Redis answers the undo at once.
func TestAttackLockSetEndsWithScriptInFlight(t *testing.T) {
	t.Skip("finding 3: a LockAll whose wait ends with its script in flight returns still holding the members (undo not waited for); fails on a578abb")
	for _, end := range []string{"ctx", "WaitAtMost"} {
		t.Run(end, func(t *testing.T) {
			ctx, srv := serve(t)
			px := startProxy(t, srv.Addr)
			c, err := New(px.client(t, func(o *redis.Options) { o.ContextTimeoutEnabled, o.MaxRetries = true, -1 }))
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			warmSetScripts(ctx, t, c)
			names := []string{"if-a", "if-b"}
			release := px.HoldNextReply(acquireSetShape(len(names), true))
			defer release()
			go func() { time.Sleep(220 * time.Millisecond); release() }()
			var err2 error
			if end == "ctx" {
				sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
				_, err2 = c.LockAll(sctx, names)
				cancel()
			} else {
				_, err2 = c.TryLockAll(ctx, names, WaitAtMost(200*time.Millisecond))
			}
			require.ErrorIs(t, err2, ErrNotObtained)
			rdb := admin(t, srv)
			held := map[string]map[string]string{}
			for _, name := range names {
				if h := rdb.HGetAll(ctx, lockKey(name)).Val(); len(h) > 0 {
					held[name] = h
				}
			}
			require.Eventually(t, func() bool { return allFree(ctx, t, c, names) }, fast, 10*time.Millisecond)
			require.Empty(t, held, "the failed LockAll returned while the set still held members")
		})
	}
}
