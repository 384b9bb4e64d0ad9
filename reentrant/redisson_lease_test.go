package reentrant

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// No script of the Redisson format shortens a lock's lease: a re-entry, a
// renewal and a partial unlock with a shorter lease leave the longer one.
// Redisson's own scripts (the fixtures) shorten it in each case; this is
// the one deliberate difference from them.
func TestRedissonLeaseNeverShortens(t *testing.T) {
	const long, short = time.Minute, 200 * time.Millisecond
	ctx, rdb, k := redissonSetup(t, "n")
	a := mustField(wireA)
	steps := []struct {
		what string
		ours func() error
		java func() error
	}{
		{"re-entry", func() error { _, err := k.Acquire(ctx, rdb, a, "", short); return err },
			func() error {
				_, err := evalJava(ctx, rdb, javaAcquireLua, []string{"n"}, short.Milliseconds(), wireA)
				return err
			}},
		{"reenter", func() error { _, err := k.Reenter(ctx, rdb, a, "", short); return err },
			func() error {
				_, err := evalJava(ctx, rdb, javaAcquireLua, []string{"n"}, short.Milliseconds(), wireA)
				return err
			}},
		{"renewal", func() error { _, err := k.Renew(ctx, rdb, a, short); return err },
			func() error {
				_, err := evalJava(ctx, rdb, javaRenewLua, []string{"n"}, short.Milliseconds(), wireA)
				return err
			}},
		{"partial unlock", func() error { _, err := k.Unlock(ctx, rdb, a, "r", short); return err },
			func() error {
				_, err := evalJava(ctx, rdb, javaUnlockLua, []string{"n", k.Channel, k.LatchKey("r")}, 0, short.Milliseconds(), wireA, "publish", latchMs)
				return err
			}},
	}
	for _, s := range steps {
		for side, run := range map[string]func() error{"ours": s.ours, "java": s.java} {
			require.NoError(t, rdb.FlushAll(ctx).Err())
			require.NoError(t, rdb.HSet(ctx, "n", a.String(), 2).Err())
			require.NoError(t, rdb.PExpire(ctx, "n", long).Err())
			require.NoError(t, run(), "%s %s", side, s.what)
			left := rdb.PTTL(ctx, "n").Val()
			if side == "java" {
				require.LessOrEqual(t, left, short, "Redisson's %s shortens the lease", s.what)
				continue
			}
			require.Greater(t, left, long-10*time.Second, "our %s shortened the lease", s.what)
		}
	}
}

// Under a request ID, an acquire or a re-entry records its outcome, and a
// resend or an undo's replay under the same ID returns it without
// counting again: taken, refused or hold gone. DropLatch then leaves the
// state one run of Redisson's acquire leaves.
func TestRedissonAcquireReplaysUnderARequest(t *testing.T) {
	ctx, rdb, k := redissonSetup(t, "n")
	a, b := mustField(wireA), mustField(wireB)
	for range 2 { // the call and its resend
		r, err := k.Acquire(ctx, rdb, a, "q1", time.Minute)
		require.NoError(t, err)
		require.True(t, r.Acquired)
		r, err = k.Reenter(ctx, rdb, a, "q2", time.Minute)
		require.NoError(t, err)
		require.True(t, r.Acquired)
		r, err = k.Acquire(ctx, rdb, b, "q3", time.Minute)
		require.NoError(t, err)
		require.False(t, r.Acquired)
		require.Greater(t, r.HolderTTL, 50*time.Second)
		r, err = k.Reenter(ctx, rdb, b, "q4", time.Minute)
		require.NoError(t, err)
		require.True(t, r.HoldGone)
	}
	require.Equal(t, map[string]string{a.String(): "2"}, rdb.HGetAll(ctx, "n").Val(), "a resend counted again")
	require.NoError(t, rdb.Del(ctx, "n").Err())
	r, err := k.Acquire(ctx, rdb, b, "q3", time.Minute)
	require.NoError(t, err)
	require.False(t, r.Acquired, "a replay of a refused call takes nothing, though the lock is free")
	require.Zero(t, r.HolderTTL)
	for _, q := range []string{"q1", "q2", "q3", "q4"} {
		require.NoError(t, k.DropLatch(ctx, rdb, q))
	}
	require.Zero(t, rdb.DBSize(ctx).Val())
}
