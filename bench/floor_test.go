package bench

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/bench/redistest/redisproc"
)

// BenchmarkServerTimeFloor reports the server time of one uncontended
// Lock+Unlock as baton-bench counts it (INFO commandstats usec, a script's
// commands counted inside EVALSHA and on their own lines): baton's, the
// SET NX PX and compare-and-delete pair's (poll-1ms), and that of the
// cheapest lock that takes and frees a hash with one script each (HSET and
// PEXPIRE; DEL), with no token, count, queue or replay record. The last is
// the floor of any design whose Lock and Unlock are one script call each.
func BenchmarkServerTimeFloor(b *testing.B) {
	srv := redistest.Start(b)
	byName := map[string]Algorithm{}
	for _, a := range Algorithms() {
		byName[a.Name] = a
	}
	for _, name := range []string{BatonName, "poll-1ms"} {
		b.Run(name, func(b *testing.B) {
			l := benchLocker(b, srv, byName[name])
			ctx := context.Background()
			serverTime(b, srv, func() error { return lockUnlock(ctx, l, "floor") })
		})
	}
	b.Run("two-minimal-scripts", func(b *testing.B) {
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
		defer rdb.Close()
		lock := redis.NewScript(`redis.call('hset', KEYS[1], ARGV[1], 1) return redis.call('pexpire', KEYS[1], ARGV[2])`)
		unlock := redis.NewScript(`return redis.call('del', KEYS[1])`)
		ctx := context.Background()
		keys := []string{"floor:{minimal}"}
		serverTime(b, srv, func() error {
			if err := lock.Run(ctx, rdb, keys, "owner", 30000).Err(); err != nil {
				return err
			}
			return unlock.Run(ctx, rdb, keys).Err()
		})
	})
}

// serverTime runs op b.N times, after one untimed run that loads its
// scripts, and reports the server µs it cost per run.
func serverTime(b *testing.B, srv *redistest.Server, op func() error) {
	b.Helper()
	if err := op(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	before, err := redisproc.ReadCommands(ctx, srv.Admin())
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	after, err := redisproc.ReadCommands(ctx, srv.Admin())
	if err != nil {
		b.Fatal(err)
	}
	d := after.Sub(before)
	delete(d.Usec, "info")
	b.ReportMetric(float64(d.Usec.Total())/float64(b.N), "server-µs/op")
}
