package reentrant

import (
	"context"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// The bench command runs on an embedded miniredis by default, so the scripts
// must run on its Lua interpreter too.
func TestScriptsRunOnMiniredis(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()
	l, err := Namespace{}.Lock("mini")
	require.NoError(t, err)

	r, err := l.Acquire(ctx, rdb, "A", "r1", testLease)
	require.NoError(t, err)
	require.True(t, r.Acquired)
	require.Positive(t, r.Token)
	first := r.Token
	r, err = l.Acquire(ctx, rdb, "A", "r1", testLease)
	require.NoError(t, err)
	require.EqualValues(t, 1, r.HoldCount, "replayed")
	require.Equal(t, first, r.Token)
	r, err = l.Acquire(ctx, rdb, "B", "r2", testLease)
	require.NoError(t, err)
	require.False(t, r.Acquired)
	require.Positive(t, r.HolderTTL)

	errs := RenewAll(ctx, rdb, []Hold{{Lock: l, Owner: "A"}}, testLease)
	require.NoError(t, errs[0])
	st, err := l.Inspect(ctx, rdb)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"A": 1}, st.Holders)

	rel, err := l.Release(ctx, rdb, "A", "r3", testLease)
	require.NoError(t, err)
	require.Equal(t, Released, rel.Status)
	ok, err := l.ForceRelease(ctx, rdb)
	require.NoError(t, err)
	require.False(t, ok)
}
