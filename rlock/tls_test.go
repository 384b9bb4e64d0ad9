package rlock

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// Locks work over TLS, the pub/sub connection included, against a server
// that requires a password; a wrong password fails the first Lock fast and
// says why.
func TestTLS(t *testing.T) {
	ctx := testCtx(t)
	const password = "tls-test-password"
	srv := redistest.StartTLS(t)
	// The default user has no password yet, so any password is accepted
	// until CONFIG SET; this client stays valid after it.
	rdb := srv.Admin(func(o *redis.Options) { o.Password = password })
	require.NoError(t, rdb.ConfigSet(ctx, "requirepass", password).Err())
	as := func(pass string) func(*redis.Options) {
		return func(o *redis.Options) { o.Username, o.Password = "", pass }
	}

	plain := redis.NewClient(&redis.Options{Addr: srv.TLSAddr, Password: password, MaxRetries: -1, ReadTimeout: time.Second})
	defer plain.Close()
	require.Error(t, plain.Ping(ctx).Err(), "the TLS port answered plain text")

	t.Run("Lock and Unlock", func(t *testing.T) {
		a, err := New(srv.TLSClient(as(password)))
		require.NoError(t, err)
		t.Cleanup(func() { _ = a.Close() })
		b, err := New(srv.TLSClient(as(password)))
		require.NoError(t, err)
		t.Cleanup(func() { _ = b.Close() })

		l, err := a.Lock(ctx, "tls")
		require.NoError(t, err)
		type result struct {
			l   *Lock
			err error
		}
		got := make(chan result, 1)
		go func() {
			w, err := b.Lock(ctx, "tls")
			got <- result{w, err}
		}()
		require.Eventually(t, func() bool {
			return rdb.LLen(ctx, lockKey("tls")+":queue").Val() == 1
		}, 5*time.Second, 5*time.Millisecond, "the waiter subscribes over TLS")
		require.NoError(t, l.Unlock(ctx))
		select {
		case r := <-got:
			require.NoError(t, r.err)
			require.Greater(t, r.l.Token(), l.Token())
			require.NoError(t, r.l.Unlock(ctx))
		case <-time.After(fast):
			t.Fatal("the release over TLS did not wake the waiter")
		}
		require.Zero(t, rdb.Exists(ctx, lockKey("tls")).Val())
	})

	t.Run("wrong password", func(t *testing.T) {
		c, err := New(srv.TLSClient(as("wrong")))
		require.NoError(t, err, "New does no I/O")
		t.Cleanup(func() { _ = c.Close() })
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		start := time.Now()
		_, err = c.Lock(lctx, "tls")
		require.ErrorContains(t, err, "WRONGPASS")
		require.Less(t, time.Since(start), time.Second, "a wrong password must fail fast, not retry")
	})
}
