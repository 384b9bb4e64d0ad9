package notify

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// backend is what the hub needs from a client in a given Mode: where a channel
// is served, and which commands subscribe to it. Tests replace route to spread
// channels over several connections without a cluster.
type backend struct {
	// open returns a PubSub without channels. It does no I/O: the first
	// subscribe dials, and on a cluster it dials the owner of that channel.
	open        func(ctx context.Context, channels ...string) *redis.PubSub
	subscribe   func(ps *redis.PubSub, ctx context.Context, channels ...string) error
	unsubscribe func(ps *redis.PubSub, ctx context.Context, channels ...string) error
	// route names the connection that serves channel: channels with the same
	// key share one PubSub.
	route func(ctx context.Context, channel string) (string, error)
	// refresh asks for new routing after the server moved a channel away.
	refresh func(ctx context.Context)
}

func newBackend(rdb redis.UniversalClient, mode Mode) (backend, error) {
	switch mode {
	case Classic:
		return backend{
			open:        rdb.Subscribe,
			subscribe:   (*redis.PubSub).Subscribe,
			unsubscribe: (*redis.PubSub).Unsubscribe,
			route:       oneConnection,
			refresh:     func(context.Context) {},
		}, nil
	case Sharded:
		b := backend{
			open:        rdb.SSubscribe,
			subscribe:   (*redis.PubSub).SSubscribe,
			unsubscribe: (*redis.PubSub).SUnsubscribe,
			route:       oneConnection,
			refresh:     func(context.Context) {},
		}
		if cc, ok := rdb.(*redis.ClusterClient); ok {
			b.route, b.refresh = masterRoute(cc), cc.ReloadState
		}
		return b, nil
	}
	return backend{}, fmt.Errorf("notify: unknown mode %d", mode)
}

// oneConnection routes every channel to the same connection: a single server,
// or Classic mode on a cluster, where PUBLISH reaches every node.
func oneConnection(context.Context, string) (string, error) { return "", nil }

// masterRoute routes a shard channel to the address of the master that owns
// its slot, so each master gets one connection.
func masterRoute(cc *redis.ClusterClient) func(context.Context, string) (string, error) {
	return func(ctx context.Context, channel string) (string, error) {
		node, err := cc.MasterForKey(ctx, channel)
		if err != nil {
			return "", fmt.Errorf("notify: route %q: %w", channel, err)
		}
		return node.Options().Addr, nil
	}
}
