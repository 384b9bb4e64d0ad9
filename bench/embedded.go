package bench

import (
	"context"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// fastForwardEvery is how often the embedded server's clock catches up with
// real time.
const fastForwardEvery = 50 * time.Millisecond

// Embedded starts a miniredis in this process and returns it as a Target,
// so the benchmark runs on a machine without Redis. Its figures say how the
// algorithms behave on a slow single-threaded server, not how fast a real
// Redis is, and the Target is marked so that every output says it. stop
// shuts it down.
func Embedded() (t Target, stop func(), err error) {
	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		return Target{}, nil, err
	}
	// miniredis expires keys only when told that time has passed; leases
	// and baton's request keys must expire as they would on Redis.
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(fastForwardEvery)
		defer tick.Stop()
		last := time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				mr.FastForward(now.Sub(last))
				last = now
			}
		}
	}()
	t = Target{
		Name:      "embedded miniredis",
		Miniredis: true,
		NewClient: func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: mr.Addr()}) },
		// Keys left by one run would slow the next: miniredis visits every
		// key on each FastForward.
		Reset: func(context.Context) error { mr.FlushAll(); return nil },
	}
	return t, func() { close(done); <-stopped; mr.Close() }, nil
}
