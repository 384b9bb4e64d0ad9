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
		{"re-entry", func() error { _, err := k.Acquire(ctx, rdb, a, short); return err },
			func() error {
				_, err := evalJava(ctx, rdb, javaAcquireLua, []string{"n"}, short.Milliseconds(), wireA)
				return err
			}},
		{"reenter", func() error { _, err := k.Reenter(ctx, rdb, a, short); return err },
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
