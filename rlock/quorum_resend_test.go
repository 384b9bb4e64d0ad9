package rlock

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// quorumBehindProxies is a quorum Client whose nodes each go through a
// proxy, with a read timeout of 300ms and retries (go-redis resends a
// command whose reply is late), its scripts loaded by one Lock.
func quorumBehindProxies(t *testing.T, ctx context.Context, srvs []*redistest.Server, retries int) (*Client, []*proxy) {
	t.Helper()
	pxs := proxiesTo(t, srvs)
	c := quorumThrough(t, pxs, func(o *redis.Options) { o.ReadTimeout, o.MaxRetries = 300*time.Millisecond, retries })
	warm, err := c.Lock(ctx, "warm")
	require.NoError(t, err)
	require.NoError(t, warm.Unlock(ctx))
	// The warm Lock returned once a majority answered: until every node
	// has run its round 1 (its counter exists) and given back what it
	// granted, a late command of it (the last node's join) can take the
	// reply a test holds back or drops.
	require.Eventually(t, func() bool {
		for _, s := range srvs {
			if n, err := admin(t, s).Exists(ctx, lockKey("warm")+":fence").Result(); err != nil || n == 0 {
				return false
			}
		}
		return wkLeft(ctx, srvs, "warm") == ""
	}, 5*time.Second, 10*time.Millisecond, "the warm Lock did not settle")
	return c, pxs
}

// proxiesTo starts a proxy to each of srvs.
func proxiesTo(t *testing.T, srvs []*redistest.Server) []*proxy {
	t.Helper()
	pxs := make([]*proxy, len(srvs))
	for i, s := range srvs {
		pxs[i] = startProxy(t, s.Addr)
	}
	return pxs
}

// quorumThrough is a quorum Client whose nodes are pxs, each on a go-redis
// client of its own (opts applied), closed at the end of the test.
func quorumThrough(t *testing.T, pxs []*proxy, opts ...func(*redis.Options)) *Client {
	t.Helper()
	nodes := make([]redis.UniversalClient, len(pxs))
	for i, p := range pxs {
		nodes[i] = p.client(t, opts...)
	}
	return quorumOf(t, nodes)
}

// A lost reply at each step of both rounds, and of the release, on two
// nodes of 3 (a majority, so that the step cannot be decided without
// them): a resent command runs twice on the server and counts once, and
// a call whose ctx ends while the replies are held back leaves nothing
// once they come.
func TestQuorumResendsAndCancellation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		step    string // the script whose reply is lost or held
		cancel  bool   // hold the replies and end the Lock's ctx, rather than drop them (resend)
		retries int
	}{
		{"round 1 resent", "acquire", false, 2},
		{"round 2 resent", "quorum-raise", false, 2},
		{"release resent", "release", false, 2},
		{"round 1 lost", "acquire", false, -1},
		{"round 1 cancelled", "acquire", true, 2},
		{"round 2 cancelled", "quorum-raise", true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			srvs := startNodes(t, 3)
			c, pxs := quorumBehindProxies(t, ctx, srvs, tc.retries)
			var held []func()
			for _, px := range pxs[:2] {
				if tc.cancel {
					held = append(held, px.HoldNextReply(isScript(tc.step)))
				} else {
					px.DropNextReply(isScript(tc.step), tc.retries < 0)
				}
			}
			lockCtx, stop := context.WithTimeout(ctx, 150*time.Millisecond)
			if !tc.cancel {
				lockCtx = ctx
			}
			l, err := c.Lock(lockCtx, "resent")
			stop()
			switch {
			case tc.cancel:
				require.ErrorIs(t, err, ErrNotObtained)
				require.ErrorIs(t, err, context.DeadlineExceeded)
				for _, release := range held {
					release()
				}
			case tc.retries < 0:
				require.ErrorIs(t, err, ErrNoQuorum)
			default:
				require.NoError(t, err)
				for _, s := range srvs {
					holders, err := admin(t, s).HGetAll(ctx, lockKey("resent")).Result()
					require.NoError(t, err)
					require.Contains(t, []map[string]string{{l.Owner(): "1"}, {}}, holders, "a resend counted twice")
				}
				require.NoError(t, l.Unlock(ctx))
			}
			requireNothingLeftOnNodes(t, ctx, srvs, "resent")
			other := newQuorumClient(t, srvs)
			got, err := other.TryLock(ctx, "resent")
			require.NoError(t, err)
			if l != nil {
				require.Greater(t, got.Token(), l.Token())
			}
			require.NoError(t, got.Unlock(ctx))
		})
	}
}
