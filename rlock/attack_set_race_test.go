package rlock_test

// Outside attacks on the multi-lock: a set's wait ending (WaitAtMost,
// ctx) as the grant of the member it waits for arrives.

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/rlock"
)

// atkSetOrder is names in the set's canonical order, as a probe set on c
// reports it.
func atkSetOrder(t *testing.T, ctx context.Context, c *rlock.Client, names []string) []string {
	t.Helper()
	probe, err := c.LockAll(ctx, names)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Unlock(ctx)
	return probe.Names()
}

// atkSetDeployment is what a race needs of a deployment: a Client of its
// own pool, and the length of a list.
type atkSetDeployment struct {
	client func() *rlock.Client
	llen   func(key string) int64
	names  []string
}

func atkSingleNode(t *testing.T) atkSetDeployment {
	srv := redistest.Start(t)
	return atkSetDeployment{
		client: func() *rlock.Client { return atkClient(t, srv) },
		llen:   func(key string) int64 { return srv.Admin().LLen(context.Background(), key).Val() },
		names:  []string{"swe-a", "swe-b"},
	}
}

// atkCluster is a 3-shard cluster, with the set's two names on two shards.
func atkCluster(t *testing.T) atkSetDeployment {
	cl := redistest.StartCluster(t, 3)
	rdb := cl.ClusterClient()
	t.Cleanup(func() { rdb.Close() })
	return atkSetDeployment{
		client: func() *rlock.Client {
			r := cl.ClusterClient()
			c, err := rlock.New(r)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close(); r.Close() })
			return c
		},
		llen:  func(key string) int64 { return rdb.LLen(context.Background(), key).Val() },
		names: []string{cl.TagOn(t, cl.Nodes[0], "swe-"), cl.TagOn(t, cl.Nodes[2], "swe-")},
	}
}

// atkSentinel is a master with a replica behind a sentinel: the set's
// members acknowledged by the replica, waiters kept alive by liveness keys.
func atkSentinel(t *testing.T) atkSetDeployment {
	sn := redistest.StartSentinel(t)
	rdb := sn.FailoverClient()
	return atkSetDeployment{
		client: func() *rlock.Client {
			c, err := rlock.New(sn.FailoverClient())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		},
		llen:  func(key string) int64 { return rdb.LLen(context.Background(), key).Val() },
		names: []string{"swe-a", "swe-b"},
	}
}

// awaitLen waits until the list key has length n, or until over.
func (d atkSetDeployment) awaitLen(t *testing.T, key string, n int64, over *atomic.Bool) {
	t.Helper()
	atkAwait(t, fmt.Sprintf("%s reaches length %d", key, n), func() bool { return over.Load() || d.llen(key) == n })
}

// TestAttackLockSetWaitEndsAsGrantArrives: X holds the set's second member;
// V waits behind the set's hold of the first, W behind the set on the
// second. The set's wait ends (WaitAtMost, or its ctx) about when X
// unlocks. Whatever the set's fate, V and W are granted at once after it
// (no lost wake-up) and a failed set leaves nothing. On a single node and
// on a cluster, the members on two shards, and behind a sentinel.
func TestAttackLockSetWaitEndsAsGrantArrives(t *testing.T) {
	for _, dep := range []string{"single", "cluster", "sentinel"} {
		for _, end := range []string{"WaitAtMost", "ctx"} {
			t.Run(dep+"/"+end, func(t *testing.T) {
				d := map[string]func(*testing.T) atkSetDeployment{"single": atkSingleNode, "cluster": atkCluster, "sentinel": atkSentinel}[dep]
				atkSetRaceGrant(t, d(t), end)
			})
		}
	}
}

func atkSetRaceGrant(t *testing.T, d atkSetDeployment, end string) {
	ctx := atkCtx(t)
	c, x, v, w := d.client(), d.client(), d.client(), d.client()
	order := atkSetOrder(t, ctx, c, d.names)
	first, second := order[0], order[1]
	// The set's wait; X unlocks about when it ends, counted from the
	// set's start. Under load the set may give up before V and W queue:
	// the round goes on, its checks hold all the same.
	const wait = 150 * time.Millisecond
	var won, lost int
	for i := 0; i < 24; i++ {
		skew := time.Duration(i-12) * 2 * time.Millisecond
		xl, err := x.Lock(ctx, second)
		if err != nil {
			t.Fatal(err)
		}
		setDone := make(chan error, 1)
		var returned atomic.Bool
		start := time.Now()
		var set *rlock.LockSet
		go func() {
			var err error
			if end == "WaitAtMost" {
				set, err = c.TryLockAll(ctx, order, rlock.WaitAtMost(wait))
			} else {
				sctx, cancel := context.WithTimeout(ctx, wait)
				set, err = c.LockAll(sctx, order)
				cancel()
			}
			returned.Store(true)
			setDone <- err
		}()
		d.awaitLen(t, "baton:{"+second+"}:queue", 1, &returned)
		vl := atkLockInBackground(ctx, v, first)
		wl := atkLockInBackground(ctx, w, second)
		d.awaitLen(t, "baton:{"+first+"}:queue", 1, &returned)
		d.awaitLen(t, "baton:{"+second+"}:queue", 2, &returned)
		time.Sleep(time.Until(start.Add(wait - 10*time.Millisecond + skew)))
		if err := xl.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		err = atkWithin(t, setDone, "the set's return")
		if err == nil {
			won++
			if set.Context().Err() != nil {
				t.Fatalf("round %d: the set returned with an ended Context: %v", i, context.Cause(set.Context()))
			}
			if err := set.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		} else {
			lost++
		}
		for _, got := range []struct {
			ch   <-chan atkAcquired
			name string
		}{{vl, first}, {wl, second}} {
			select {
			case r := <-got.ch:
				if r.err != nil {
					t.Fatalf("round %d: the waiter on %s failed: %v", i, got.name, r.err)
				}
				if err := r.l.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
			case <-time.After(3 * time.Second):
				st, _ := c.Inspect(ctx, got.name)
				t.Fatalf("round %d (skew %v, set err %v): lost wake-up: the waiter on %s was not granted within 3s; holders %v, queue %d",
					i, skew, err, got.name, st.Holders, d.llen("baton:{"+got.name+"}:queue"))
			}
		}
		for _, name := range order {
			st, err := c.Inspect(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Holders) != 0 || d.llen("baton:{"+name+"}:queue") != 0 {
				t.Fatalf("round %d: %s left: holders %v", i, name, st.Holders)
			}
		}
	}
	t.Logf("%s: the set won %d rounds, gave up %d", end, won, lost)
}

type atkAcquired struct {
	l   *rlock.Lock
	err error
}

func atkLockInBackground(ctx context.Context, c *rlock.Client, name string) <-chan atkAcquired {
	ch := make(chan atkAcquired, 1)
	go func() {
		l, err := c.Lock(ctx, name)
		if err != nil {
			err = fmt.Errorf("Lock(%s): %w", name, err)
		}
		ch <- atkAcquired{l, err}
	}()
	return ch
}

// TestAttackLockSetFailoverWhileWaiting: behind a sentinel, a set holds its
// first member (acknowledged by the replica) and waits for its second,
// which X holds; the replica is promoted; X unlocks on the new master. The
// set is woken (no lost wake-up: well within the 30 s lease's look), holds
// both members there, and nobody else can take either while its Context
// lives.
func TestAttackLockSetFailoverWhileWaiting(t *testing.T) {
	ctx := atkCtx(t)
	sn := redistest.StartSentinel(t)
	mk := func() *rlock.Client {
		c, err := rlock.New(sn.FailoverClient())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	c, x, other := mk(), mk(), mk()
	rdb := sn.FailoverClient()
	order := atkSetOrder(t, ctx, c, []string{"sfo-a", "sfo-b"})
	xl, err := x.Lock(ctx, order[1])
	if err != nil {
		t.Fatal(err)
	}
	type res struct {
		s   *rlock.LockSet
		err error
	}
	got := make(chan res, 1)
	go func() {
		s, err := c.LockAll(ctx, order)
		got <- res{s, err}
	}()
	atkAwait(t, "the set queues at "+order[1], func() bool {
		return rdb.LLen(ctx, "baton:{"+order[1]+"}:queue").Val() == 1
	})
	sn.Failover()
	if err := xl.Unlock(ctx); err != nil {
		t.Logf("X's Unlock after the failover: %v", err)
	}
	var r res
	select {
	case r = <-got:
	case <-time.After(8 * time.Second):
		st, _ := other.Inspect(ctx, order[1])
		t.Fatalf("lost wake-up: the set still waits 8 s after the failover and X's Unlock; %s holders %v, queue %d",
			order[1], st.Holders, rdb.LLen(ctx, "baton:{"+order[1]+"}:queue").Val())
	}
	if r.err != nil {
		t.Logf("the set failed: %v", r.err)
		return
	}
	defer r.s.Unlock(ctx)
	for _, name := range order {
		atkSetNoSecondHolder(t, ctx, r.s.Context(), other, name)
	}
}
