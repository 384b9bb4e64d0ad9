package rlock_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/bench"
	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/rlock"
)

// Many waiters that come and go, with one node slowed.
//
// 16 goroutines on 8 quorum Clients contend for one lock on 3 nodes for
// 5 s, node 1 reached through a 3 ms delay proxy (split votes). Each call
// is at random: a Lock whose ctx ends 1–80 ms in, a Lock WaitAtMost
// 1–80 ms, a TryLock, or a patient Lock (8 s). A holder holds 0–2 ms.
// Checked: no two holders whose Contexts are live at once, tokens rise
// (README "What its tokens guarantee"); every patient Lock is granted and
// every call returns (no livelock: README "waiting cannot deadlock", and
// "16 contenders on 3 nodes with one node slowed: every call completes,
// nothing left when a ctx ends"); nothing is left on any node, wake keys
// included, once every call has ended (README key table: a waiter's leave
// takes its record out); the messages per node are reported against the
// holds (README: "at most one message per hold per node" for a storm of
// plain Locks; here with cancellations, reported, bounded at 4 per call).
func TestAttackWakeStormComeAndGo(t *testing.T) {
	ctx := atkCtx(t)
	srvs := aqNodes(t, 3)
	const name = "wk-storm"
	slow, err := bench.StartDelayProxy(srvs[1].Addr, 3*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = slow.Close() })
	clients := make([]*rlock.Client, 8)
	for i := range clients {
		rdbs := aqDirect(srvs)
		o := redistest.Options(slow.Addr)
		rdbs[1] = redis.NewClient(o)
		t.Cleanup(func() { _ = rdbs[1].Close() })
		clients[i] = aqQuorum(t, rdbs)
	}
	before := make([]int64, 3)
	for i, s := range srvs {
		st, err := redistest.ReadCommandStats(ctx, s.Admin())
		if err != nil {
			t.Fatal(err)
		}
		before[i] = st["publish"]
	}

	var (
		mu        sync.Mutex
		current   *rlock.Lock
		lastToken uint64
		overlaps  int
		falls     int
	)
	var holds, calls, patientMiss, errs atomic.Int64
	var maxPatient atomic.Int64
	stop := time.Now().Add(5 * time.Second)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[g%len(clients)]
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for time.Now().Before(stop) {
				calls.Add(1)
				var l *rlock.Lock
				var err error
				op := r.IntN(4)
				start := time.Now()
				switch op {
				case 0:
					cctx, cancel := context.WithTimeout(ctx, time.Duration(1+r.IntN(80))*time.Millisecond)
					l, err = c.Lock(cctx, name)
					cancel()
				case 1:
					l, err = c.Lock(ctx, name, rlock.WaitAtMost(time.Duration(1+r.IntN(80))*time.Millisecond))
				case 2:
					l, err = c.TryLock(ctx, name)
				case 3:
					cctx, cancel := context.WithTimeout(ctx, 8*time.Second)
					l, err = c.Lock(cctx, name)
					cancel()
					took := time.Since(start)
					for {
						m := maxPatient.Load()
						if int64(took) <= m || maxPatient.CompareAndSwap(m, int64(took)) {
							break
						}
					}
					if err != nil {
						patientMiss.Add(1)
					}
				}
				if err != nil {
					if !errors.Is(err, rlock.ErrNotObtained) {
						errs.Add(1)
						t.Errorf("op %d: %v", op, err)
					}
					continue
				}
				holds.Add(1)
				mu.Lock()
				if current != nil && current.Context().Err() == nil {
					overlaps++
					t.Errorf("two holders live at once: tokens %d and %d", current.Token(), l.Token())
				}
				if l.Token() <= lastToken {
					falls++
					t.Errorf("token %d after %d", l.Token(), lastToken)
				}
				lastToken = l.Token()
				current = l
				mu.Unlock()
				time.Sleep(time.Duration(r.IntN(2000)) * time.Microsecond)
				mu.Lock()
				if current == l {
					current = nil
				}
				mu.Unlock()
				if err := l.Unlock(ctx); err != nil {
					t.Errorf("Unlock: %v", err)
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatalf("calls still running 10 s after the storm's end (livelock?): %s", aqLeft(ctx, srvs, name))
	}
	t.Logf("calls %d, holds %d, patient Locks not granted in 8 s %d, longest patient wait %v, other errors %d, overlaps %d, token falls %d",
		calls.Load(), holds.Load(), patientMiss.Load(), time.Duration(maxPatient.Load()), errs.Load(), overlaps, falls)
	if patientMiss.Load() > 0 {
		t.Errorf("%d patient Locks not granted in 8 s", patientMiss.Load())
	}
	deadline := time.Now().Add(5 * time.Second)
	for aqLeft(ctx, srvs, name) != "" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if left := aqLeft(ctx, srvs, name); left != "" {
		t.Errorf("left 5 s after every call ended: %s", left)
	}
	for i, s := range srvs {
		st, err := redistest.ReadCommandStats(ctx, s.Admin())
		if err != nil {
			t.Fatal(err)
		}
		pub := st["publish"] - before[i]
		t.Logf("node %d: %d messages, %.2f per hold, %.2f per call", i, pub, float64(pub)/float64(holds.Load()), float64(pub)/float64(calls.Load()))
		if pub > 4*calls.Load() {
			t.Errorf("node %d: %d messages for %d calls: a storm", i, pub, calls.Load())
		}
	}
}
