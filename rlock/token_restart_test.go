package rlock

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// take takes one hold of the lock, the RW lock or the semaphore and returns its token and its
// release.
type take func(ctx context.Context) (uint64, func() error)

// takeHold adapts a call that returns a Lock.
func takeHold(t *testing.T, obtain func(ctx context.Context, opts ...LockOption) (*Lock, error)) take {
	return func(ctx context.Context) (uint64, func() error) {
		l, err := obtain(ctx)
		require.NoError(t, err)
		return l.Token(), func() error { return l.Unlock(ctx) }
	}
}

// No token of the lock, the RW lock or the semaphore falls below a token handed out before it,
// across a restart of a server without persistence, which loses the
// fencing counter with the holds. Each kind holds twice before the restart
// (a write first, so a read has a write's token to share) and once after.
func TestTokensNeverFallAcrossRestart(t *testing.T) {
	kinds := map[string]func(t *testing.T, c *Client) (before, after take){
		"lock": func(t *testing.T, c *Client) (take, take) {
			h := takeHold(t, func(ctx context.Context, opts ...LockOption) (*Lock, error) {
				return c.Lock(ctx, "tok", opts...)
			})
			return h, h
		},
		"write": func(t *testing.T, c *Client) (take, take) {
			h := takeHold(t, c.RWLock("tok").Lock)
			return h, h
		},
		"read": func(t *testing.T, c *Client) (take, take) {
			rw := c.RWLock("tok")
			w, r := takeHold(t, rw.Lock), takeHold(t, rw.RLock)
			first := true
			return func(ctx context.Context) (uint64, func() error) {
				if first {
					first = false
					return w(ctx)
				}
				return r(ctx)
			}, r
		},
		"permit": func(t *testing.T, c *Client) (take, take) {
			s := c.Semaphore("tok", 3)
			h := func(ctx context.Context) (uint64, func() error) {
				p, err := s.Acquire(ctx, 2)
				require.NoError(t, err)
				return p.Token(), func() error { return p.Release(ctx) }
			}
			return h, h
		},
	}
	for name, kind := range kinds {
		t.Run(name, func(t *testing.T) {
			ctx, srv := serve(t)
			before, after := kind(t, newClient(t, srv))
			var last uint64
			for range 2 {
				token, release := before(ctx)
				require.GreaterOrEqual(t, token, last)
				last = token
				require.NoError(t, release())
			}
			srv.Restart() // no persistence: the counter is gone
			token, release := after(ctx)
			require.NoError(t, release())
			require.Greater(t, token, last, "a hold after the restart has a token above every one before it")
		})
	}
}

// A read whose resource lost its counter takes a token by the writes'
// rule; reads side by side share it, and a write after them is above it.
func TestReadsAfterRestartShareAndWritesRise(t *testing.T) {
	ctx, srv := serve(t)
	rw := newClient(t, srv).RWLock("tok")
	w, err := rw.Lock(ctx)
	require.NoError(t, err)
	require.NoError(t, w.Unlock(ctx))
	srv.Restart()
	r1, err := rw.RLock(ctx)
	require.NoError(t, err)
	r2, err := rw.RLock(ctx)
	require.NoError(t, err)
	require.Greater(t, r1.Token(), w.Token(), "the first read after the restart is above the write before it")
	require.Equal(t, r1.Token(), r2.Token(), "reads side by side share a token")
	require.NoError(t, r1.Unlock(ctx))
	require.NoError(t, r2.Unlock(ctx))
	w2, err := rw.Lock(ctx)
	require.NoError(t, err)
	require.Greater(t, w2.Token(), r1.Token(), "a write after the reads is above their token")
	require.NoError(t, w2.Unlock(ctx))
}
