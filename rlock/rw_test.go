package rlock

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// rwKey is the hash key of the RW lock called name under the default
// prefix.
func rwKey(name string) string { return lockKey(name) + ":rw" }

// requireOnlyFence fails unless all that is left of name's resources
// are keys that expire: their fences, request records, waiters' liveness
// keys, hold-ID counters and a semaphore's size.
func requireOnlyFence(t *testing.T, rdb *redis.Client, name string) {
	t.Helper()
	ctx := context.Background()
	var left []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		left = left[:0]
		for _, k := range rdb.Keys(ctx, "*{"+name+"}*").Val() {
			ttl := rdb.PTTL(ctx, k).Val()
			gone := ttl == -2 // expired since KEYS listed it
			expires := (strings.Contains(k, ":req:") || strings.Contains(k, ":alive:") || strings.HasSuffix(k, ":fence") ||
				strings.HasSuffix(k, ":ids") || strings.HasSuffix(k, ":sem:size")) && ttl > 0
			if !gone && !expires {
				left = append(left, fmt.Sprintf("%s (PTTL %v)", k, ttl))
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	require.Empty(t, left, "keys of %s left", name)
}

// rlockInBackground calls rw.RLock (or rw.Lock, if write) on another
// goroutine.
func rlockInBackground(ctx context.Context, rw *RWLock, write bool) <-chan acquired {
	got := make(chan acquired, 1)
	start := time.Now()
	go func() {
		take := rw.RLock
		if write {
			take = rw.Lock
		}
		l, err := take(ctx)
		got <- acquired{lock: l, took: time.Since(start), at: time.Now(), err: err}
	}()
	return got
}

// waitForRWQueued waits until n calls wait in the queue of RW lock name.
func waitForRWQueued(t *testing.T, srv *redistest.Server, name string, n int64) {
	t.Helper()
	waitForQueueLen(t, srv, rwKey(name), n)
}

func TestRWReadsShareWriteExcludes(t *testing.T) {
	ctx, srv := serve(t)
	c1, c2 := newClient(t, srv), newClient(t, srv)
	rw1, rw2 := c1.RWLock("orders"), c2.RWLock("orders")

	r1, err := rw1.RLock(ctx)
	require.NoError(t, err)
	r2, err := rw2.RLock(ctx)
	require.NoError(t, err, "reads share")
	_, err = rw2.TryLock(ctx)
	require.ErrorIs(t, err, ErrNotObtained, "a write waits for the reads")

	// A plain lock of the same name is another resource.
	pl, err := c2.TryLock(ctx, "orders")
	require.NoError(t, err)
	require.NoError(t, pl.Unlock(ctx))

	wch := rlockInBackground(ctx, rw2, true)
	waitForRWQueued(t, srv, "orders", 1)
	require.NoError(t, r1.Unlock(ctx))
	_, err = rw1.TryRLock(ctx)
	require.ErrorIs(t, err, ErrNotObtained, "a read waits behind a queued write")
	require.NoError(t, r2.Unlock(ctx))
	w := receive(t, wch)
	require.Greater(t, w.Token(), r1.Token(), "a write grant's token is above every earlier grant's")
	_, err = rw1.TryRLock(ctx)
	require.ErrorIs(t, err, ErrNotObtained, "a write excludes reads")
	rch := rlockInBackground(ctx, rw1, false)
	waitForRWQueued(t, srv, "orders", 1)
	require.NoError(t, w.Unlock(ctx))
	r := receive(t, rch)
	require.Equal(t, w.Token(), r.Token(), "a read's token is the last write grant's")
	require.NoError(t, r.Unlock(ctx))
	requireOnlyFence(t, admin(t, srv), "orders")
}

func TestRWReentryUpgradeDowngrade(t *testing.T) {
	ctx, srv := serve(t)
	c, other := newClient(t, srv), newClient(t, srv)
	rw := c.RWLock("orders")

	r, err := rw.RLock(ctx)
	require.NoError(t, err)
	rr, err := rw.RLock(r.Context())
	require.NoError(t, err, "read inside read re-enters")
	require.Equal(t, r.Owner(), rr.Owner())
	rdb := admin(t, srv)
	before := commandCalls(t, rdb)
	_, err = rw.Lock(r.Context())
	require.ErrorIs(t, err, ErrUpgrade)
	_, err = rw.TryLock(rr.Context())
	require.ErrorIs(t, err, ErrUpgrade)
	require.Equal(t, before, commandCalls(t, rdb), "ErrUpgrade sends nothing")
	require.NoError(t, rr.Unlock(ctx))
	require.NoError(t, r.Unlock(ctx))

	w, err := rw.Lock(ctx)
	require.NoError(t, err)
	ww, err := rw.Lock(w.Context())
	require.NoError(t, err, "write inside write re-enters")
	require.Equal(t, w.Token(), ww.Token())
	require.NoError(t, ww.Unlock(ctx))
	down, err := rw.RLock(w.Context())
	require.NoError(t, err, "read inside write is granted at once")
	require.Equal(t, w.Token(), down.Token())
	// A writer queued meanwhile does not get in between.
	wch := rlockInBackground(ctx, other.RWLock("orders"), true)
	waitForRWQueued(t, srv, "orders", 1)
	require.NoError(t, w.Unlock(ctx))
	st, err := rw.Inspect(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{down.Owner(): 1}, st.Readers, "the read hold remains after the write's Unlock")
	require.Empty(t, st.Writer)
	select {
	case got := <-wch:
		t.Fatalf("a writer got in between: %v", got.err)
	case <-time.After(50 * time.Millisecond):
	}
	require.NoError(t, down.Unlock(ctx))
	w2 := receive(t, wch)
	require.Greater(t, w2.Token(), w.Token())
	require.NoError(t, w2.Unlock(ctx))
	requireOnlyFence(t, rdb, "orders")
}

// commandCalls is the server's count of calls of each command but INFO,
// from INFO commandstats.
func commandCalls(t *testing.T, rdb *redis.Client) map[string]int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	out := map[string]int64{}
	for _, line := range strings.Split(info, "\r\n") {
		name, stats, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":calls=")
		if !ok || name == "info" {
			continue
		}
		calls, _, _ := strings.Cut(stats, ",")
		out[name], err = strconv.ParseInt(calls, 10, 64)
		require.NoError(t, err)
	}
	return out
}

// The watchdog renews read holds, each under its owner, while the process
// lives: two reads held across several leases stay valid and in Redis.
func TestRWWatchdogRenewsReads(t *testing.T) {
	ctx, srv := serve(t)
	c := newClient(t, srv, WithWatchdogLease(300*time.Millisecond))
	rw := c.RWLock("renewed")
	r1, err := rw.RLock(ctx)
	require.NoError(t, err)
	r2, err := rw.RLock(ctx)
	require.NoError(t, err)
	time.Sleep(time.Second)
	require.NoError(t, r1.Context().Err())
	require.NoError(t, r2.Context().Err())
	st, err := rw.Inspect(ctx)
	require.NoError(t, err)
	require.Len(t, st.Readers, 2)
	require.NoError(t, r1.Unlock(ctx))
	require.NoError(t, r2.Unlock(ctx))
	requireOnlyFence(t, admin(t, srv), "renewed")
}

// A downgrade's read, taken through the write's Context, keeps its Context
// past the write's Unlock: it ends with the read's own hold, which stays,
// renewed by the watchdog, until its own Unlock. One taken with
// WithOwner(ctx, w.Owner()) is granted at once all the same.
func TestRWDowngradeContexts(t *testing.T) {
	ctx, srv := serve(t)
	c := newClient(t, srv, WithWatchdogLease(300*time.Millisecond))
	rw := c.RWLock("down")

	w, err := rw.Lock(ctx)
	require.NoError(t, err)
	down, err := rw.RLock(w.Context())
	require.NoError(t, err)
	require.NoError(t, w.Unlock(ctx))
	require.NoError(t, down.Context().Err(), "the write's Unlock ended the read's Context")
	time.Sleep(time.Second) // three leases: the read hold is renewed
	require.NoError(t, down.Context().Err())
	st, err := rw.Inspect(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{down.Owner(): 1}, st.Readers)
	require.NoError(t, down.Unlock(ctx))
	require.ErrorIs(t, context.Cause(down.Context()), context.Canceled)

	w, err = rw.Lock(ctx)
	require.NoError(t, err)
	kept, err := rw.RLock(WithOwner(ctx, w.Owner()), WaitAtMost(time.Nanosecond))
	require.NoError(t, err, "a read by the writer's owner is granted at once")
	require.Equal(t, w.Token(), kept.Token())
	require.NoError(t, w.Unlock(ctx))
	require.NoError(t, kept.Context().Err())
	require.NoError(t, kept.Unlock(ctx))
	requireOnlyFence(t, admin(t, srv), "down")
}
