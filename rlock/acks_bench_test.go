package rlock

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/batonlock/baton/bench/redistest"
)

// BenchmarkReplicaAcks compares, on a master with one replica, replica
// acknowledgements off and on in one run: an uncontended Lock+Unlock
// (ns/op), and a hot key that 8 goroutines of one client take in turn
// (acq/s, and the p99 of a Lock's wait as wait-p99-ns), and the idle
// hand-off gap of BenchmarkIdleHandOff.
func BenchmarkReplicaAcks(b *testing.B) {
	srv := redistest.Start(b)
	redistest.StartReplica(b, srv)
	for _, mode := range []struct {
		name string
		opt  Option
	}{{"off", WithReplicaAcks(0, 0)}, {"on", WithReplicaAcks(1, time.Second)}} {
		c, err := New(srv.Client(), mode.opt)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		b.Run("uncontended/acks="+mode.name, func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				takeAndGiveBack(b, ctx, c, "uncontended")
			}
		})
		b.Run("hotkey/acks="+mode.name, func(b *testing.B) { benchmarkHotKey(b, c) })
		b.Run("handoff/acks="+mode.name, func(b *testing.B) { benchmarkIdleHandOff(b, srv, mode.opt) })
	}
}

// benchmarkHotKey has 8 goroutines of c take one lock in turn, b.N times
// in all.
func benchmarkHotKey(b *testing.B, c *Client) {
	ctx := context.Background()
	var mu sync.Mutex
	var waits []time.Duration
	b.SetParallelism(8)
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			sent := time.Now()
			takeAndGiveBack(b, ctx, c, "hot")
			mu.Lock()
			waits = append(waits, time.Since(sent))
			mu.Unlock()
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "acq/s")
	slices.Sort(waits)
	b.ReportMetric(float64(waits[len(waits)*99/100]), "wait-p99-ns")
}

// takeAndGiveBack takes the lock called name on c and unlocks it.
func takeAndGiveBack(b *testing.B, ctx context.Context, c *Client, name string) {
	l, err := c.Lock(ctx, name)
	if err != nil {
		b.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		b.Fatal(err)
	}
}
