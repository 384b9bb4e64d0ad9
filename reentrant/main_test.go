package reentrant

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/batonlock/baton/bench/redistest"
)

// The package starts no goroutines; its tests' servers must not leave any.
func TestMain(m *testing.M) {
	redistest.RequireInstalled()
	goleak.VerifyTestMain(m)
}

const testLease = 10 * time.Second

func setup(t *testing.T, name string) (context.Context, *redis.Client, Keys) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	rdb := redistest.Start(t).Client()
	l, err := Namespace{}.Keys(name)
	require.NoError(t, err)
	return ctx, rdb, l
}

// currentToken reads the fencing counter, which is the token of the hold
// that holds l.
func currentToken(t *testing.T, rdb *redis.Client, l Keys) uint64 {
	t.Helper()
	n, err := rdb.Get(context.Background(), l.Fence).Uint64()
	if err != nil && err != redis.Nil {
		t.Fatal(err)
	}
	return n
}

// publishes counts the PUBLISH commands the server ran, scripts included.
func publishes(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	st, err := redistest.ReadCommandStats(context.Background(), rdb)
	require.NoError(t, err)
	return st["publish"]
}

// subscribed subscribes to the grant channel of client "c-<id>" and
// returns the subscription and a waiter on it.
func subscribed(t *testing.T, rdb *redis.Client, l Keys, id string) (*redis.PubSub, Waiter) {
	t.Helper()
	w := Waiter{ID: id, Channel: l.GrantChannel("c-" + id)}
	sub := rdb.Subscribe(context.Background(), w.Channel)
	t.Cleanup(func() { _ = sub.Close() })
	_, err := sub.Receive(context.Background())
	require.NoError(t, err)
	return sub, w
}

func receiveGrant(t *testing.T, sub *redis.PubSub) Grant {
	t.Helper()
	g, err := ParseGrant(receivePayload(t, sub))
	require.NoError(t, err)
	return g
}

// receivePayload is the next message on sub, as published.
func receivePayload(t *testing.T, sub *redis.PubSub) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	msg, err := sub.ReceiveMessage(ctx)
	require.NoError(t, err)
	return msg.Payload
}
