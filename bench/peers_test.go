package bench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// Each algorithm, peers included, on a real server: a lock is taken,
// excludes a second process until released, and is then taken by it.
func TestEveryAlgorithmAcquiresExcludesAndReleases(t *testing.T) {
	srv := redistest.Start(t)
	for _, algo := range Algorithms() {
		t.Run(algo.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			a, b := openLocker(t, srv, algo, "excl:"), openLocker(t, srv, algo, "excl:")
			held, err := a.Lock(ctx, "x")
			require.NoError(t, err)

			short, stop := context.WithTimeout(ctx, 100*time.Millisecond)
			_, err = b.Lock(short, "x")
			stop()
			require.Error(t, err, "held by a: b must wait until its context ends")
			other, err := b.Lock(ctx, "y")
			require.NoError(t, err, "another name is free")
			require.NoError(t, other.Unlock(ctx))

			require.NoError(t, held.Unlock(ctx))
			held, err = b.Lock(ctx, "x")
			require.NoError(t, err, "released by a")
			require.NoError(t, held.Unlock(ctx))
		})
	}
}
