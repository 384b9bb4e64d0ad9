package notify

import (
	"context"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"
)

// backend is what the hub needs from a client in a given Mode: where a channel
// is served, and which commands subscribe to it. Tests replace route to spread
// channels over several connections without a cluster.
type backend struct {
	// open returns a PubSub without channels for the connection that route
	// named key. It does no I/O: the first subscribe dials.
	open        func(ctx context.Context, key string) *redis.PubSub
	subscribe   func(ps *redis.PubSub, ctx context.Context, channels ...string) error
	unsubscribe func(ps *redis.PubSub, ctx context.Context, channels ...string) error
	// route names the connection that serves channel: channels with the same
	// key share one PubSub.
	route func(ctx context.Context, channel string) (string, error)
	// refresh asks for new routing after the server moved a channel away.
	// It may return before the routing has changed.
	refresh func(ctx context.Context)
}

func newBackend(rdb redis.UniversalClient, mode Mode) (backend, error) {
	switch rdb.(type) {
	case *redis.Client, *redis.ClusterClient:
	default:
		return backend{}, fmt.Errorf("%w: %T", ErrUnsupportedClient, rdb)
	}
	switch mode {
	case Classic:
		return backend{
			open:        func(ctx context.Context, _ string) *redis.PubSub { return rdb.Subscribe(ctx) },
			subscribe:   (*redis.PubSub).Subscribe,
			unsubscribe: (*redis.PubSub).Unsubscribe,
			route:       oneConnection,
			refresh:     func(context.Context) {},
		}, nil
	case Sharded:
		b := backend{
			open:        func(ctx context.Context, _ string) *redis.PubSub { return rdb.SSubscribe(ctx) },
			subscribe:   (*redis.PubSub).SSubscribe,
			unsubscribe: (*redis.PubSub).SUnsubscribe,
			route:       oneConnection,
			refresh:     func(context.Context) {},
		}
		if cc, ok := rdb.(*redis.ClusterClient); ok {
			m := &masters{cc: cc, byAddr: map[string]*redis.Client{}}
			b.open, b.route, b.refresh = m.open, m.route, cc.ReloadState
		}
		return b, nil
	}
	return backend{}, fmt.Errorf("notify: unknown mode %d", mode)
}

// oneConnection routes every channel to the same connection: a single server,
// or Classic mode on a cluster, where PUBLISH reaches every node.
func oneConnection(context.Context, string) (string, error) { return "", nil }

// masters routes a shard channel to the address of the master that owns its
// slot, so each master gets one connection, and opens that connection on the
// master's own client. A PubSub of the cluster client would dial whichever
// node the client's view names when it first subscribes, and that view may
// have changed since the route was chosen: a connection could then serve a
// key it is not connected to, and answer MOVED for its channels forever.
type masters struct {
	cc     *redis.ClusterClient
	mu     sync.Mutex
	byAddr map[string]*redis.Client // the last client the cluster gave per address
}

func (m *masters) route(ctx context.Context, channel string) (string, error) {
	node, err := m.cc.MasterForKey(ctx, channel)
	if err != nil {
		return "", fmt.Errorf("notify: route %q: %w", channel, err)
	}
	addr := node.Options().Addr
	m.mu.Lock()
	m.byAddr[addr] = node
	m.mu.Unlock()
	return addr, nil
}

func (m *masters) open(ctx context.Context, addr string) *redis.PubSub {
	m.mu.Lock()
	node := m.byAddr[addr]
	m.mu.Unlock()
	if node == nil { // every key comes from route, so this is not expected
		return m.cc.SSubscribe(ctx)
	}
	return node.SSubscribe(ctx)
}
