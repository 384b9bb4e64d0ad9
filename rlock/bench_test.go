package rlock

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/bench/redistest"
)

// BenchmarkIdleHandOff is the idle hand-off: two clients take turns holding
// one lock, and before each release the other has been parked in Lock for
// 2 ms in an otherwise idle process. Its ns/op is the p50 of the gap from
// the start of Unlock to the waiter's Lock returning; ping-ns is the p50 of
// a PING the holder sends on its own client 1 ms before it releases, and
// gap/ping their ratio. Run it with -benchtime 1000x or more.
func BenchmarkIdleHandOff(b *testing.B) {
	srv := redistest.Start(b)
	ctx := context.Background()
	var rdbs [2]*redis.Client
	var clients [2]*Client
	for i := range clients {
		rdbs[i] = srv.Client()
		c, err := New(rdbs[i])
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		clients[i] = c
	}
	held, err := clients[0].Lock(ctx, "idle")
	if err != nil {
		b.Fatal(err)
	}
	type taken struct {
		l   *Lock
		at  time.Time
		err error
	}
	next := make(chan taken, 1)
	var gaps, pings []time.Duration
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		holder, waiter := i%2, 1-i%2
		go func() {
			l, err := clients[waiter].Lock(ctx, "idle")
			next <- taken{l, time.Now(), err}
		}()
		time.Sleep(time.Millisecond)
		sent := time.Now()
		if err := rdbs[holder].Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		pings = append(pings, time.Since(sent))
		time.Sleep(time.Millisecond)
		start := time.Now()
		if err := held.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
		t := <-next
		if t.err != nil {
			b.Fatal(t.err)
		}
		gaps = append(gaps, t.at.Sub(start))
		held = t.l
	}
	if err := held.Unlock(ctx); err != nil {
		b.Fatal(err)
	}
	gap, ping := median(gaps), median(pings)
	b.ReportMetric(float64(gap.Nanoseconds()), "ns/op")
	b.ReportMetric(float64(ping.Nanoseconds()), "ping-ns")
	b.ReportMetric(float64(gap)/float64(ping), "gap/ping")
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}
