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
// did not answer within 250 ms)": Redis answers the undo at once. Also with
// a script that queued the set at a held member ("queued"): the queue
// entry is left too. And with no ctx ending ("hung up"): the connection
// drops as the reply comes, and LockAll fails with the transport error.
func TestAttackLockSetEndsWithScriptInFlight(t *testing.T) {
	for _, end := range []string{"ctx", "WaitAtMost", "queued", "hung up"} {
		t.Run(end, func(t *testing.T) {
			ctx, srv := serve(t)
			px := startProxy(t, srv.Addr)
			c, err := New(px.client(t, func(o *redis.Options) { o.ContextTimeoutEnabled, o.MaxRetries = true, -1 }))
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			warmSetScripts(ctx, t, c)
			names := inOrder(t, c, "if-a", "if-b")
			shape := acquireSetShape(len(names), true)
			if end == "queued" {
				// The script takes the first member and queues the set
				// at the second, which X holds.
				warmGrantLine(ctx, t, c)
				x, err := newClient(t, srv).Lock(ctx, names[1])
				require.NoError(t, err)
				defer x.Unlock(ctx)
				shape = queuingSetShape(len(names))
			}
			var err2 error
			switch end {
			case "hung up":
				// The connection drops as the reply comes: no ctx ends.
				px.DropNextReply(shape, true)
				_, err2 = c.LockAll(ctx, names)
				require.Error(t, err2)
				err2 = ErrNotObtained
			case "WaitAtMost":
				release := px.HoldNextReply(shape)
				defer release()
				go func() { time.Sleep(220 * time.Millisecond); release() }()
				_, err2 = c.TryLockAll(ctx, names, WaitAtMost(200*time.Millisecond))
			default:
				release := px.HoldNextReply(shape)
				defer release()
				go func() { time.Sleep(220 * time.Millisecond); release() }()
				sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
				_, err2 = c.LockAll(sctx, names)
				cancel()
			}
			require.ErrorIs(t, err2, ErrNotObtained)
			rdb := admin(t, srv)
			held := map[string]map[string]string{}
			for _, name := range names {
				if h := rdb.HGetAll(ctx, lockKey(name)).Val(); len(h) > 0 {
					held[name] = h
				}
			}
			queued := rdb.LLen(ctx, lockKey(names[1])+":queue").Val()
			require.Eventually(t, func() bool {
				return allFree(ctx, t, c, names[:1]) && rdb.LLen(ctx, lockKey(names[1])+":queue").Val() == 0
			}, fast, 10*time.Millisecond)
			if end == "queued" {
				delete(held, names[1]) // X's
				require.Zero(t, queued, "the failed LockAll returned while the set was still queued at %s (and held %v)", names[1], held)
			}
			require.Empty(t, held, "the failed LockAll returned while the set still held members")
		})
	}
}
