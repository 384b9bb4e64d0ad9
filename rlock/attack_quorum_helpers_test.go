package rlock_test

// Helpers of the outside attacks on quorum mode (attack_quorum_*_test.go):
// public API and bench/redistest only.

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/rlock"
)

// aqNodes starts n independent redis-servers with args.
func aqNodes(t *testing.T, n int, args ...string) []*redistest.Server {
	t.Helper()
	srvs := make([]*redistest.Server, n)
	for i := range srvs {
		srvs[i] = redistest.Start(t, args...)
	}
	return srvs
}

// aqQuorum is a quorum Client on rdbs, closed at the end of the test.
func aqQuorum(t *testing.T, rdbs []redis.UniversalClient, opts ...rlock.Option) *rlock.Client {
	t.Helper()
	c, err := rlock.NewQuorum(rdbs, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// aqDirect is a go-redis client per server, each its own pool.
func aqDirect(srvs []*redistest.Server) []redis.UniversalClient {
	rdbs := make([]redis.UniversalClient, len(srvs))
	for i, s := range srvs {
		rdbs[i] = s.Client()
	}
	return rdbs
}

// aqLeft names what lock name left on each node: its hash, queue,
// granted or wake key (the fence counter stays by design).
func aqLeft(ctx context.Context, srvs []*redistest.Server, name string) string {
	k := atkResourceKey("lock", name)
	out := ""
	for i, s := range srvs {
		for _, key := range []string{k, k + ":queue", k + ":granted", k + ":wake"} {
			if n, err := s.Admin().Exists(ctx, key).Result(); err != nil || n > 0 {
				out += fmt.Sprintf("node %d: %s (err %v, hash %v, pttl %v); ", i, key, err,
					s.Admin().HGetAll(ctx, k).Val(), s.Admin().PTTL(ctx, key).Val())
			}
		}
	}
	return out
}
