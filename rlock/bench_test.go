package rlock

import (
	"context"
	"fmt"
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
func BenchmarkIdleHandOff(b *testing.B) { benchmarkIdleHandOff(b, redistest.Start(b)) }

// benchmarkIdleHandOff is BenchmarkIdleHandOff on srv, with clients made
// with opts.
func benchmarkIdleHandOff(b *testing.B, srv *redistest.Server, opts ...Option) {
	ctx := context.Background()
	var rdbs [2]*redis.Client
	var clients [2]*Client
	for i := range clients {
		rdbs[i] = srv.Client()
		c, err := New(rdbs[i], opts...)
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
	reportAgainstPing(b, gaps, pings, "gap/ping")
}

// reportAgainstPing reports the p50 of times as ns/op, the p50 of pings as
// ping-ns, and their ratio under perPing.
func reportAgainstPing(b *testing.B, times, pings []time.Duration, perPing string) {
	t, ping := median(times), median(pings)
	b.ReportMetric(float64(t.Nanoseconds()), "ns/op")
	b.ReportMetric(float64(ping.Nanoseconds()), "ping-ns")
	b.ReportMetric(float64(t)/float64(ping), perPing)
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// BenchmarkRWBatchGrant is a write's release admitting k reads queued
// behind it, on two reader clients, k/2 each (issue 24, property 3). Its
// ns/op is the p50 of the time from the start of the write's Unlock to the
// last of the k reads holding; ping-ns is the p50 of a PING the writer
// sends on its own client just before it releases, and batch/ping their
// ratio. The release's own round trip is one PING: "all k hold within one
// round trip of the release" is a batch/ping of about 2. Run it with
// -benchtime 200x or more.
func BenchmarkRWBatchGrant(b *testing.B) {
	for _, k := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) { benchmarkRWBatchGrant(b, k) })
	}
}

func benchmarkRWBatchGrant(b *testing.B, k int) {
	srv := redistest.Start(b)
	ctx := context.Background()
	writerRDB := srv.Client()
	writer, err := New(writerRDB)
	if err != nil {
		b.Fatal(err)
	}
	defer writer.Close()
	var readers [2]*RWLock
	for i := range readers {
		c, err := New(srv.Client())
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		readers[i] = c.RWLock("batch")
	}
	type read struct {
		l   *Lock
		at  time.Time
		err error
	}
	got := make(chan read, k)
	var batches, pings []time.Duration
	for b.Loop() {
		w, err := writer.RWLock("batch").Lock(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for i := range k {
			go func() {
				l, err := readers[i%2].RLock(ctx)
				got <- read{l, time.Now(), err}
			}()
		}
		awaitQueued(b, srv.Admin(), rwKey("batch")+":queue", int64(k))
		sent := time.Now()
		if err := writerRDB.Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		pings = append(pings, time.Since(sent))
		start := time.Now()
		if err := w.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
		var last time.Time
		held := make([]*Lock, 0, k)
		for range k {
			r := <-got
			if r.err != nil {
				b.Fatal(r.err)
			}
			held = append(held, r.l)
			if r.at.After(last) {
				last = r.at
			}
		}
		batches = append(batches, last.Sub(start))
		for _, l := range held {
			if err := l.Unlock(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	reportAgainstPing(b, batches, pings, "batch/ping")
}

// awaitQueued waits, polling every 200 µs for at most 5 s, until the list
// key holds n entries: the waiters are parked before the release, as in
// an idle process.
func awaitQueued(b *testing.B, rdb *redis.Client, key string, n int64) {
	b.Helper()
	for deadline := time.Now().Add(5 * time.Second); rdb.LLen(context.Background(), key).Val() != n; {
		if time.Now().After(deadline) {
			b.Fatalf("%d waiters not queued on %s", n, key)
		}
		time.Sleep(200 * time.Microsecond)
	}
	time.Sleep(time.Millisecond) // the last one's client is back to waiting
}
