package rlock

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// deadSlack bounds how long after a dead holder's lease deadline the next
// waiter is granted: its look at the deadline (a waiter looks again when
// the earliest lease runs out) and a round trip. The waiters' own lease is
// longLease, so a waiter that only looked every third of its lease would
// take seconds more.
const deadSlack = time.Second

// rwLease is the single lease deadline (server ms) in RW lock name's
// leases, and its member; ok is false when none is left.
func rwLease(ctx context.Context, t *testing.T, rdb *redis.Client, name string) (member string, deadline int64, ok bool) {
	t.Helper()
	zs, err := rdb.ZRangeWithScores(ctx, rwKey(name)+":leases", 0, -1).Result()
	require.NoError(t, err)
	require.LessOrEqual(t, len(zs), 1, "one hold at most")
	if len(zs) == 0 {
		return "", 0, false
	}
	return zs[0].Member.(string), int64(zs[0].Score), true
}

// Issue 24 property 6, holders: a read or write holder in a process of
// its own is renewed by the watchdog while it lives, and no longer once it
// is SIGKILLed: its lease deadline never moves again, its part is freed at
// that deadline (not before), and the next live unit queued behind it (a
// write behind the read; two reads of two clients behind the write) is
// granted within deadSlack of it, without waiting out a lease of its own.
// Ahead of that unit waits another SIGKILLed process of the other mode
// (a write, or a read that would be in the batch), which the look that
// grants at the deadline skips.
func TestRWKilledHolderRenewedUntilDeathThenFreed(t *testing.T) {
	for _, mode := range []string{"r", "w"} {
		t.Run(mode, func(t *testing.T) {
			ctx, srv := serve(t)
			rdb := admin(t, srv)
			name := "dead-" + mode
			ch := startHolder(t, srv, name, faultLease, helperRW+"="+mode)
			ch.locked()
			member, first, ok := rwLease(ctx, t, rdb, name)
			require.True(t, ok)
			require.Regexp(t, "^"+mode+":", member)
			// Renewed over three leases: the deadline keeps moving on.
			for until := time.Now().Add(3 * faultLease); time.Now().Before(until); time.Sleep(10 * time.Millisecond) {
				_, _, ok := rwLease(ctx, t, rdb, name)
				require.True(t, ok, "the live holder's hold ended")
			}
			_, renewed, _ := rwLease(ctx, t, rdb, name)
			require.Greater(t, renewed, first+int64(faultLease/time.Millisecond), "not renewed while alive")

			next, dead := []bool{true}, "w" // a write behind the read
			if mode == "w" {
				next, dead = []bool{false, false}, "r" // two reads behind the write
			}
			deadWaiter := startHolder(t, srv, name, longLease, helperRW+"="+dead)
			waitForRWQueued(t, srv, name, 1)
			var grants []<-chan acquired
			for _, write := range next {
				rw := newClient(t, srv, WithWatchdogLease(longLease)).RWLock(name)
				grants = append(grants, rlockInBackground(ctx, rw, write))
			}
			waitForRWQueued(t, srv, name, int64(1+len(next)))

			ch.kill()
			deadWaiter.kill()
			ch.awaitDisconnected(ctx, rdb) // nothing they sent can arrive after this
			_, deadline, ok := rwLease(ctx, t, rdb, name)
			require.True(t, ok, "the dead holder's part was freed before its lease ran out")
			var holds []*Lock
			for i, got := range grants {
				l := receiveBy(t, got, time.UnixMilli(deadline).Add(fast))
				late := l.at.Sub(time.UnixMilli(deadline))
				t.Logf("unit %d granted %v after the dead holder's lease deadline", i, late)
				require.GreaterOrEqual(t, late, time.Duration(0), "granted before the dead holder's lease ran out")
				require.Less(t, late, deadSlack)
				holds = append(holds, l.lock)
			}
			require.ErrorIs(t, rdb.ZScore(ctx, rwKey(name)+":leases", member).Err(), redis.Nil,
				"the dead holder's lease is gone")
			for _, l := range holds {
				require.NoError(t, l.Unlock(ctx))
			}
			requireOnlyFence(t, rdb, name)
		})
	}
}

// Issue 24 property 6, waiters: a reader or a writer SIGKILLed while it
// waits, queued at the head, costs the waiter behind it one skipped entry
// when the write before them is released: that waiter is granted at once,
// not after any lease or look interval (its own lease is longLease, so it
// looks every 10 s).
func TestRWKilledQueuedWaiterIsSkipped(t *testing.T) {
	for _, mode := range []string{"r", "w"} {
		t.Run(mode, func(t *testing.T) {
			ctx, srv := serve(t)
			rdb := admin(t, srv)
			name := "deadwait-" + mode
			holder := newClient(t, srv, WithWatchdogLease(longLease)).RWLock(name)
			w, err := holder.Lock(ctx)
			require.NoError(t, err)
			ch := startHolder(t, srv, name, longLease, helperRW+"="+mode)
			waitForRWQueued(t, srv, name, 1)
			behind := rlockInBackground(ctx, newClient(t, srv, WithWatchdogLease(longLease)).RWLock(name), mode == "r")
			waitForRWQueued(t, srv, name, 2)
			ch.kill()
			ch.awaitDisconnected(ctx, rdb)

			require.NoError(t, w.Unlock(ctx))
			got := receive(t, behind)
			st, err := holder.Inspect(ctx)
			require.NoError(t, err)
			require.Zero(t, st.Queued, "the dead waiter's entry is gone")
			if mode == "r" {
				require.Equal(t, got.Owner(), st.Writer, "the writer behind holds")
			} else {
				require.Equal(t, map[string]int64{got.Owner(): 1}, st.Readers, "the reader behind holds")
			}
			require.NoError(t, got.Unlock(ctx))
			requireOnlyFence(t, rdb, name)
		})
	}
}
