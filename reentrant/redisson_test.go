package reentrant

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/notify/slot"
)

func redissonSetup(t *testing.T, name string) (context.Context, *redis.Client, RedissonKeys) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	k, err := RedissonNamespace{}.Keys(name)
	require.NoError(t, err)
	return ctx, redistest.Start(t).Client(), k
}

func TestRedissonPrefixName(t *testing.T) {
	for name, want := range map[string]string{
		"orders":     "p:{orders}",
		"{acct}lock": "p:{acct}lock",
		"lock{acct}": "p:lock{acct}", // node-redisson would brace it: Java looks for '{' anywhere
		"lock{":      "p:lock{",
		"a}b":        "p:{a}b}",
	} {
		require.Equal(t, want, RedissonPrefixName("p", name), name)
	}
}

// A Sharded namespace serves a cluster, where Redisson's own scripts fail
// on a name whose channel is in another slot: Keys refuses it, and
// accepts every name whose channel and latches share its slot.
func TestRedissonKeysRefuseCrossSlot(t *testing.T) {
	for _, wn := range wireNames {
		k, err := RedissonNamespace{Sharded: true}.Keys(wn.name)
		hashSlot := slot.Of(wn.name)
		sameSlot := hashSlot == slot.Of(wn.channel) && hashSlot == slot.Of(wn.latchPrefix+"r1")
		require.Equal(t, !sameSlot, wn.crossSlot, wn.name)
		if wn.crossSlot {
			require.ErrorIs(t, err, ErrInvalidName, wn.name)
			continue
		}
		require.NoError(t, err, wn.name)
		require.Equal(t, wn.channel, k.Channel)
		_, err = RedissonNamespace{}.Keys(wn.name)
		require.NoError(t, err, "%s: PUBLISH on a single node takes any name", wn.name)
	}
	for _, name := range []string{"{}a", "x{}{y}", "}{"} {
		_, err := RedissonNamespace{Sharded: true}.Keys(name)
		require.ErrorIs(t, err, ErrInvalidName, name)
	}
}

func TestRedissonInvalidInput(t *testing.T) {
	ctx, rdb, k := redissonSetup(t, "orders")
	_, err := RedissonNamespace{}.Keys("")
	require.ErrorIs(t, err, ErrInvalidName)
	for _, tc := range []struct{ clientID, owner string }{{"", "1"}, {"a:b", "1"}} {
		_, err = NewRedissonField(tc.clientID, tc.owner)
		require.ErrorIs(t, err, ErrInvalidClientID, tc.clientID)
	}
	_, err = NewRedissonField("c", "")
	require.ErrorIs(t, err, ErrInvalidOwner)
	f, err := NewRedissonField("c", "x:y")
	require.NoError(t, err)
	require.Equal(t, "c:x:y", f.String(), "the owner may hold ':': the client ID cannot")

	var zero RedissonField
	_, err = k.Acquire(ctx, rdb, zero, "", time.Second)
	require.ErrorIs(t, err, ErrInvalidOwner)
	_, err = k.Unlock(ctx, rdb, zero, "r", time.Second)
	require.ErrorIs(t, err, ErrInvalidOwner)
	_, err = k.Renew(ctx, rdb, zero, time.Second)
	require.ErrorIs(t, err, ErrInvalidOwner)
	_, err = k.Unlock(ctx, rdb, f, "", time.Second)
	require.ErrorIs(t, err, ErrInvalidRequestID)
	_, err = k.AcquireFresh(ctx, rdb, f, 0)
	require.ErrorIs(t, err, ErrInvalidLease)
	_, err = RedissonKeys{}.ForceUnlock(ctx, rdb)
	require.ErrorIs(t, err, ErrInvalidName)
	_, err = RedissonKeys{}.Acquire(ctx, rdb, f, "", time.Second)
	require.ErrorIs(t, err, ErrInvalidName)

	n, err := rdb.DBSize(ctx).Result()
	require.NoError(t, err)
	require.Zero(t, n, "bad input reaches no script")
}

// go-redis resends a script whose reply timed out. A first acquire that
// counted the hold twice would need two unlocks: the owner's one unlock
// would leave the lock held by nobody alive until the lease ends.
func TestRedissonAcquireFreshResend(t *testing.T) {
	ctx, rdb, k := redissonSetup(t, "orders")
	a, b := mustField("client-a:1"), mustField("client-b:1")
	for range 2 { // the call and its resend
		r, err := k.AcquireFresh(ctx, rdb, a, time.Minute)
		require.NoError(t, err)
		require.Equal(t, RedissonAcquireResult{Acquired: true}, r)
	}
	require.Equal(t, map[string]string{a.String(): "1"}, rdb.HGetAll(ctx, k.Hash).Val())

	r, err := k.AcquireFresh(ctx, rdb, b, time.Minute)
	require.NoError(t, err)
	require.False(t, r.Acquired)
	require.InDelta(t, time.Minute, r.HolderTTL, float64(5*time.Second))

	st, err := k.Unlock(ctx, rdb, a, "r1", time.Minute)
	require.NoError(t, err)
	require.Equal(t, Released, st, "one unlock frees one acquire, resent or not")
}

// go-redis resends an unlock whose reply timed out. Counted twice, a
// partial unlock would free a lock whose owner still holds it, and let a
// second holder in.
func TestRedissonUnlockResendKeepsHold(t *testing.T) {
	ctx, rdb, k := redissonSetup(t, "orders")
	a, b := mustField("client-a:1"), mustField("client-b:1")
	for range 2 {
		r, err := k.Acquire(ctx, rdb, a, "", time.Minute)
		require.NoError(t, err)
		require.True(t, r.Acquired)
	}
	for range 2 { // the call and its resend
		st, err := k.Unlock(ctx, rdb, a, "r1", time.Minute)
		require.NoError(t, err)
		require.Equal(t, StillHeld, st)
	}
	r, err := k.Acquire(ctx, rdb, b, "", time.Minute)
	require.NoError(t, err)
	require.False(t, r.Acquired, "a still holds one hold")

	// The final unlock, resent after b took the lock, leaves b's hold alone.
	st, err := k.Unlock(ctx, rdb, a, "r2", time.Minute)
	require.NoError(t, err)
	require.Equal(t, Released, st)
	r, err = k.Acquire(ctx, rdb, b, "", time.Minute)
	require.NoError(t, err)
	require.True(t, r.Acquired)
	st, err = k.Unlock(ctx, rdb, a, "r2", time.Minute)
	require.NoError(t, err)
	require.Equal(t, Released, st, "replayed")
	require.Equal(t, map[string]string{b.String(): "1"}, rdb.HGetAll(ctx, k.Hash).Val())

	st, err = k.Unlock(ctx, rdb, b, "r3", time.Minute)
	require.NoError(t, err)
	require.Equal(t, Released, st)
	require.EqualValues(t, 3, rdb.Exists(ctx, k.LatchKey("r1"), k.LatchKey("r2"), k.LatchKey("r3")).Val(), "Unlock leaves its latch")
	require.NoError(t, k.DropLatch(ctx, rdb, "r3"))
	require.Zero(t, rdb.Exists(ctx, k.LatchKey("r3")).Val(), "DropLatch deletes it")
}

func TestRedissonRenew(t *testing.T) {
	ctx, rdb, k := redissonSetup(t, "orders")
	a := mustField("client-a:1")
	ok, err := k.Renew(ctx, rdb, a, time.Minute)
	require.NoError(t, err)
	require.False(t, ok, "nothing held")
	require.Zero(t, rdb.Exists(ctx, k.Hash).Val(), "renew never creates the lock")

	_, err = k.Acquire(ctx, rdb, a, "", time.Minute)
	require.NoError(t, err)
	ok, err = k.Renew(ctx, rdb, a, 2*time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	require.Greater(t, rdb.PTTL(ctx, k.Hash).Val(), 110*time.Second, "extended, as Redisson's watchdog does")

	renewed, err := RedissonRenewBatch(ctx, rdb, nil, time.Second)
	require.NoError(t, err)
	require.Empty(t, renewed)
}

func TestIsRedissonWake(t *testing.T) {
	for payload, want := range map[string]bool{"0": true, "1": true, "2": false, "": false, "00": false} {
		require.Equal(t, want, IsRedissonWake(payload), payload)
	}
}

// A holder whose lock was force-unlocked (or expired) must not take it
// back by re-entering, as Redisson's acquire would: its re-entry would
// hide the loss, and its outer hold would go on as if never interrupted.
func TestRedissonReenterNeverTakesALostLock(t *testing.T) {
	ctx, rdb, k := redissonSetup(t, "orders")
	a := mustField("client-a:1")
	r, err := k.Reenter(ctx, rdb, a, "", time.Minute)
	require.NoError(t, err)
	require.Equal(t, RedissonAcquireResult{HoldGone: true}, r)
	require.Zero(t, rdb.Exists(ctx, k.Hash).Val(), "a free lock stays free")

	_, err = k.Acquire(ctx, rdb, mustField("client-b:1"), "", time.Minute)
	require.NoError(t, err)
	r, err = k.Reenter(ctx, rdb, a, "", time.Minute)
	require.NoError(t, err)
	require.True(t, r.HoldGone, "another's lock is no re-entry")

	_, err = k.ForceUnlock(ctx, rdb)
	require.NoError(t, err)
	_, err = k.Acquire(ctx, rdb, a, "", time.Minute)
	require.NoError(t, err)
	r, err = k.Reenter(ctx, rdb, a, "", 2*time.Minute)
	require.NoError(t, err)
	require.Equal(t, RedissonAcquireResult{Acquired: true}, r)
	require.Equal(t, map[string]string{a.String(): "2"}, rdb.HGetAll(ctx, k.Hash).Val())
	require.InDelta(t, 2*time.Minute, rdb.PTTL(ctx, k.Hash).Val(), float64(5*time.Second))
}
