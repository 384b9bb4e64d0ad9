package rlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/rlock"
)

// A lease shorter than two nodes' latency: nodes 0 and 1 are reached
// through proxies that hold their replies back in bursts of 40 ms, and
// every TryLock asks WithLease(20ms), waiting at most 100 ms. A call ends
// with the lock, ErrNotObtained, or ErrNoQuorum (the two slow nodes, a
// majority, had not answered); it never returns a hold whose validity has
// passed (its Context is live on return), and once the calls end nothing
// is left on any node.
func TestAtkQuorumLeaseShorterThanLatency(t *testing.T) {
	ctx := atkCtx(t)
	srvs := aqNodes(t, 3)
	rdbs := aqDirect(srvs)
	var prxs []*atkProxy
	for i := 0; i < 2; i++ {
		p := atkStartProxy(t, srvs[i].Addr)
		prxs = append(prxs, p)
		rdb := redis.NewClient(redistest.Options(p.Addr()))
		t.Cleanup(func() { rdb.Close() })
		rdbs[i] = rdb
	}
	a := aqQuorum(t, rdbs)
	stop := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			for _, p := range prxs {
				p.Hold()
			}
			select {
			case <-stop:
				for _, p := range prxs {
					p.Release()
				}
				return
			case <-time.After(40 * time.Millisecond):
			}
			for _, p := range prxs {
				p.Release()
			}
			time.Sleep(time.Millisecond)
		}
	}()
	took, noQuorum := 0, 0
	for i := 0; i < 30; i++ {
		l, err := a.TryLock(ctx, "latency", rlock.WithLease(20*time.Millisecond), rlock.WaitAtMost(100*time.Millisecond))
		if errors.Is(err, rlock.ErrNotObtained) {
			continue
		}
		if errors.Is(err, rlock.ErrNoQuorum) {
			noQuorum++
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		took++
		if err := l.Context().Err(); err != nil {
			t.Fatalf("Lock returned a hold already ended: %v", context.Cause(l.Context()))
		}
		_ = l.Unlock(ctx)
	}
	close(stop)
	<-stopped
	t.Logf("%d of 30 taken, %d ErrNoQuorum", took, noQuorum)
	aqRequireClean(t, srvs, "latency", "after the last call")
}
