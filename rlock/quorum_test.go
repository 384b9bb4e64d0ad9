package rlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// startNodes starts n redis-servers, independent masters.
func startNodes(t *testing.T, n int, args ...string) []*redistest.Server {
	t.Helper()
	srvs := make([]*redistest.Server, n)
	for i := range srvs {
		srvs[i] = redistest.Start(t, args...)
	}
	return srvs
}

// nodeClients is a go-redis client per server, each on its own pool.
func nodeClients(srvs []*redistest.Server, opts ...func(*redis.Options)) []redis.UniversalClient {
	rdbs := make([]redis.UniversalClient, len(srvs))
	for i, s := range srvs {
		rdbs[i] = s.Client(opts...)
	}
	return rdbs
}

// newQuorumClient is a quorum Client on srvs, closed at the end of the
// test, like a separate process would have.
func newQuorumClient(t *testing.T, srvs []*redistest.Server, opts ...Option) *Client {
	t.Helper()
	return quorumOf(t, nodeClients(srvs), opts...)
}

// quorumOf is a quorum Client on nodes, closed at the end of the test.
func quorumOf(t *testing.T, nodes []redis.UniversalClient, opts ...Option) *Client {
	t.Helper()
	c, err := NewQuorum(nodes, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// requireNothingLeftOnNodes waits up to 5 s for every node to have nothing
// of the lock left (an Unlock returns once a majority confirmed it, and the
// other nodes' releases may still be on their way), then fails naming
// what is (see wkLeft).
func requireNothingLeftOnNodes(t *testing.T, ctx context.Context, srvs []*redistest.Server, name string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := wkLeft(ctx, srvs, name)
		if left == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("left on the nodes 5 s after every call ended: %s", left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestQuorumLockUnlock(t *testing.T) {
	ctx := testCtx(t)
	srvs := startNodes(t, 3)
	c := newQuorumClient(t, srvs)
	var last uint64
	for range 3 {
		l, err := c.Lock(ctx, "q")
		require.NoError(t, err)
		require.Greater(t, l.Token(), last, "tokens rise from holder to holder")
		last = l.Token()
		committed := 0
		for _, s := range srvs {
			fence, err := admin(t, s).Get(ctx, lockKey("q")+":fence").Uint64()
			require.NoError(t, err)
			if fence == l.Token() {
				committed++
			}
		}
		require.GreaterOrEqual(t, committed, 2, "a majority's counter is the token")
		_, err = c.TryLock(ctx, "q")
		require.ErrorIs(t, err, ErrNotObtained)
		inner, err := c.Lock(l.Context(), "q")
		require.NoError(t, err, "re-entry through the Context")
		require.Equal(t, l.Token(), inner.Token())
		st, err := c.Inspect(ctx, "q")
		require.NoError(t, err)
		require.Equal(t, map[string]int64{l.Owner(): 2}, st.Holders)
		require.NoError(t, inner.Unlock(ctx))
		require.NoError(t, l.Unlock(ctx))
		require.ErrorIs(t, l.Context().Err(), context.Canceled)
	}
	requireNothingLeftOnNodes(t, ctx, srvs, "q")
	require.NoError(t, c.Do(ctx, "q", func(ctx context.Context) error {
		l, ok := FromContext(ctx)
		require.True(t, ok)
		require.Greater(t, l.Token(), last)
		return nil
	}))
}

// Holders of one quorum lock in several Clients take turns, on 3 nodes and
// on 5: a waiter is woken by the release, and each token is above the one
// before.
func TestQuorumWaitersTakeTurns(t *testing.T) {
	for _, n := range []int{3, 5} {
		t.Run(fmt.Sprint(n, " nodes"), func(t *testing.T) { takeTurns(t, n) })
	}
}

func takeTurns(t *testing.T, nodes int) {
	ctx := testCtx(t)
	srvs := startNodes(t, nodes)
	clients := []*Client{newQuorumClient(t, srvs), newQuorumClient(t, srvs)}
	var mu sync.Mutex
	var holding bool
	var tokens []uint64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				l, err := clients[g%2].Lock(ctx, "turns")
				if !assertNoError(t, err) {
					return
				}
				mu.Lock()
				if holding {
					t.Error("two holders at once")
				}
				holding = true
				tokens = append(tokens, l.Token())
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				holding = false
				mu.Unlock()
				assertNoError(t, l.Unlock(ctx))
			}
		}()
	}
	wg.Wait()
	require.Len(t, tokens, 40)
	for i := 1; i < len(tokens); i++ {
		require.Greater(t, tokens[i], tokens[i-1], "token %d", i)
	}
	requireNothingLeftOnNodes(t, ctx, srvs, "turns")
}

func TestNewQuorumBadInput(t *testing.T) {
	srvs := startNodes(t, 3)
	rdbs := nodeClients(srvs)
	ring := redis.NewRing(&redis.RingOptions{})
	t.Cleanup(func() { _ = ring.Close() })
	for _, tc := range []struct {
		name  string
		nodes []redis.UniversalClient
		opts  []Option
		want  error
	}{
		{"none", nil, nil, ErrInvalidQuorum},
		{"two", rdbs[:2], nil, ErrInvalidQuorum},
		{"nil", []redis.UniversalClient{rdbs[0], nil, rdbs[2]}, nil, ErrNilClient},
		{"typed nil", []redis.UniversalClient{rdbs[0], (*redis.Client)(nil), rdbs[2]}, nil, ErrNilClient},
		{"same client twice", []redis.UniversalClient{rdbs[0], rdbs[1], rdbs[0]}, nil, ErrInvalidQuorum},
		{"same address twice", []redis.UniversalClient{rdbs[0], rdbs[1], srvs[1].Client(func(o *redis.Options) { o.DB = 1 })}, nil, ErrInvalidQuorum},
		{"ring", []redis.UniversalClient{rdbs[0], rdbs[1], ring}, nil, ErrUnsupportedClient},
		{"wire", rdbs, []Option{WithRedissonWire("")}, ErrQuorumUnsupported},
		{"acks", rdbs, []Option{WithReplicaAcks(1, time.Second)}, ErrQuorumUnsupported},
		{"lease", rdbs, []Option{WithWatchdogLease(time.Millisecond)}, ErrInvalidLease},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewQuorum(tc.nodes, tc.opts...)
			require.ErrorIs(t, err, tc.want)
			require.Nil(t, c)
		})
	}
}

// One server under two addresses is refused before anything is dialled,
// and the error names both: a name and the IP it resolves to, the empty
// host net.Dial reads as the local system, one Unix socket by two paths.
// The clients dial nothing (NewQuorum sends nothing), so no server is
// needed.
func TestNewQuorumOneServerTwoAddresses(t *testing.T) {
	client := func(network, addr string) redis.UniversalClient {
		rdb := redis.NewClient(&redis.Options{Network: network, Addr: addr})
		t.Cleanup(func() { _ = rdb.Close() })
		return rdb
	}
	other := client("tcp", "127.0.0.1:2")
	for _, pair := range [][2]redis.UniversalClient{
		{client("tcp", "127.0.0.1:1"), client("tcp", "localhost:1")},
		{client("tcp", "localhost:1"), client("tcp", "127.0.0.1:1")},
		{client("tcp", "127.0.0.1:1"), client("tcp", ":1")},
		{client("tcp", "[::ffff:127.0.0.1]:1"), client("tcp", "127.0.0.1:1")},
		{client("unix", "/tmp/baton.sock"), client("unix", "/tmp/../tmp/baton.sock")},
	} {
		a, b := pair[0].(*redis.Client).Options().Addr, pair[1].(*redis.Client).Options().Addr
		c, err := NewQuorum([]redis.UniversalClient{pair[0], other, pair[1]})
		require.ErrorIs(t, err, ErrInvalidQuorum, "%s and %s", a, b)
		require.Nil(t, c)
		require.ErrorContains(t, err, "node 0 ("+a+") and node 2 ("+b+")")
	}
}

func TestQuorumUnsupported(t *testing.T) {
	ctx := testCtx(t)
	c := newQuorumClient(t, startNodes(t, 3))
	_, err := c.RWLock("rw").Lock(ctx)
	require.ErrorIs(t, err, ErrQuorumUnsupported)
	_, err = c.Semaphore("s", 2).Acquire(ctx, 1)
	require.ErrorIs(t, err, ErrQuorumUnsupported)
	require.False(t, errors.Is(err, ErrNotObtained))
}

// BenchmarkQuorumLockUnlock is an uncontended Lock+Unlock on 3 nodes and,
// to compare, on one: the quorum's two rounds (the acquire, then the
// token's commit) against one script call, every node in parallel.
func BenchmarkQuorumLockUnlock(b *testing.B) {
	srvs := []*redistest.Server{redistest.Start(b), redistest.Start(b), redistest.Start(b)}
	one, err := New(srvs[0].Client())
	require.NoError(b, err)
	defer one.Close()
	q, err := NewQuorum(nodeClients(srvs))
	require.NoError(b, err)
	defer q.Close()
	for _, c := range []struct {
		name string
		c    *Client
	}{{"one node", one}, {"quorum of 3", q}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				l, err := c.c.Lock(ctx, "bench")
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Unlock(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
