package rlock

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonlock/baton/bench/redistest"
)

// A storm: 32 contenders in 8 Clients, each taking the lock 5 times with
// no hold, on 3 and on 5 nodes. Each contender must finish within 30 s, a
// bound on liveness, not on speed. A hold needs at most one message per
// node (a node's release handing it to the next waiter, or, where it
// frees the node, waking one waiter of its wake records); the messages
// published (PUBLISH, on every node; "grants" below) must be no more.
// Waiters queued on every node
// passed each node's grant they could not keep down that node's queue,
// one look on every node each: on 7da86fd about 13 grants a hold on 3
// nodes and 66 on 5 (13 s for the 160 holds). Unlock checks that no hold
// was lost while held (a grant taken by a look that did not claim it would
// be given back under its holder).
func TestQuorumStormCompletes(t *testing.T) {
	for _, n := range []int{3, 5} {
		t.Run(fmt.Sprintf("%d nodes", n), func(t *testing.T) { quorumStorm(t, n) })
	}
}

func quorumStorm(t *testing.T, nodes int) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srvs := startNodes(t, nodes)
	var clients []*Client
	for range 8 {
		clients = append(clients, newQuorumClient(t, srvs))
	}
	var holds atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for g := range 32 {
		wg.Go(func() {
			for range 5 {
				l, err := clients[g%8].Lock(ctx, "storm")
				if err != nil {
					t.Errorf("contender %d after %d holds in all, %v: %v", g, holds.Load(), time.Since(start), err)
					return
				}
				holds.Add(1)
				if err := l.Unlock(context.Background()); err != nil {
					t.Errorf("contender %d's Unlock: %v", g, err)
					return
				}
			}
		})
	}
	wg.Wait()
	var grants int64
	for _, s := range srvs {
		st, err := redistest.ReadCommandStats(context.Background(), admin(t, s))
		if err != nil {
			t.Fatal(err)
		}
		grants += st["publish"]
	}
	t.Logf("%d holds in %v, %d grants", holds.Load(), time.Since(start), grants)
	if limit := holds.Load() * int64(nodes); grants > limit {
		t.Errorf("%d grants for %d holds on %d nodes: more than one a node a hold, passed down queues and given back", grants, holds.Load(), nodes)
	}
}
