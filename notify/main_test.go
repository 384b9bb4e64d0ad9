package notify

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/batonlock/baton/bench/redistest"
)

// Every reader goroutine must end with Hub.Close.
func TestMain(m *testing.M) {
	redistest.RequireInstalled()
	goleak.VerifyTestMain(m)
}

const (
	testInterval = 100 * time.Millisecond
	// settle bounds how long a test waits for something that should happen.
	settle = 3 * time.Second
	// grace is how long a test watches for something that must not happen.
	grace = 150 * time.Millisecond
)

// fixture is a real server, an admin client and a hub on its own client.
type fixture struct {
	srv   *redistest.Server
	admin *redis.Client
	hub   *Hub
	mode  Mode
	ids   int // subscriptions made, for their IDs
}

func newFixture(t *testing.T, mode Mode) *fixture {
	t.Helper()
	srv := redistest.Start(t)
	f := &fixture{srv: srv, admin: srv.Client(), mode: mode}
	h, err := New(f.client(), Options{Mode: mode, HealthCheckInterval: testInterval})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, h.Close()) })
	f.hub = h
	return f
}

// client returns a client whose timeouts keep reconnect tests short.
func (f *fixture) client() *redis.Client {
	return f.srv.Client(func(o *redis.Options) {
		o.DialTimeout = 300 * time.Millisecond
		o.ReadTimeout = 300 * time.Millisecond
		o.WriteTimeout = 300 * time.Millisecond
	})
}

// forModes runs fn against a fresh server and hub in each mode.
func forModes(t *testing.T, fn func(t *testing.T, f *fixture)) {
	for _, mode := range []Mode{Classic, Sharded} {
		t.Run(map[Mode]string{Classic: "classic", Sharded: "sharded"}[mode], func(t *testing.T) {
			fn(t, newFixture(t, mode))
		})
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (f *fixture) subscribe(t *testing.T, channel string) *Subscription {
	t.Helper()
	f.ids++
	s, err := f.hub.Subscribe(testCtx(t), channel, fmt.Sprint("s", f.ids))
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// publish sends msg on channel and returns how many server-side subscribers
// got it.
func (f *fixture) publish(t *testing.T, channel, msg string) int64 {
	t.Helper()
	ctx := testCtx(t)
	cmd := f.admin.Publish(ctx, channel, msg)
	if f.mode == Sharded {
		cmd = f.admin.SPublish(ctx, channel, msg)
	}
	n, err := cmd.Result()
	require.NoError(t, err)
	return n
}

// send publishes a message addressed to s, with payload "hi".
func (f *fixture) send(t *testing.T, s *Subscription) int64 {
	t.Helper()
	return f.publish(t, s.Channel(), s.ID()+" hi")
}

// numsub is the server's count of connections subscribed to channel.
func (f *fixture) numsub(t *testing.T, channel string) int64 {
	t.Helper()
	ctx := testCtx(t)
	cmd := f.admin.PubSubNumSub(ctx, channel)
	if f.mode == Sharded {
		cmd = f.admin.PubSubShardNumSub(ctx, channel)
	}
	m, err := cmd.Result()
	require.NoError(t, err)
	return m[channel]
}

// pubsubClients counts the server's pub/sub connections.
func (f *fixture) pubsubClients(t *testing.T) int {
	t.Helper()
	list, err := f.admin.Do(testCtx(t), "CLIENT", "LIST", "TYPE", "pubsub").Text()
	require.NoError(t, err)
	return len(nonEmptyLines(list))
}

func nonEmptyLines(s string) []string {
	var lines []string
	for _, line := range strings.Split(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			lines = append(lines, line)
		}
	}
	return lines
}

// dials is the number of connections the server has accepted.
func (f *fixture) dials(t *testing.T) int64 {
	t.Helper()
	stats, err := f.admin.Info(testCtx(t), "stats").Result()
	require.NoError(t, err)
	var n int64
	for _, line := range nonEmptyLines(stats) {
		if _, err := fmt.Sscanf(line, "total_connections_received:%d", &n); err == nil {
			return n
		}
	}
	t.Fatal("no total_connections_received in INFO stats")
	return 0
}

func (f *fixture) killPubSub(t *testing.T) {
	t.Helper()
	require.NoError(t, f.admin.Do(testCtx(t), "CLIENT", "KILL", "TYPE", "pubsub").Err())
}

// asyncWait runs Wait in a goroutine; its delivery and error arrive on the
// channels.
func asyncWait(ctx context.Context, s *Subscription) <-chan result {
	res := make(chan result, 1)
	go func() {
		d, err := s.Wait(ctx, 15*time.Second)
		res <- result{d, err}
	}()
	return res
}

// result is what a Wait returned.
type result struct {
	d   Delivery
	err error
}

// await returns the result of an asynchronous Wait, failing after settle.
func await(t *testing.T, res <-chan result) result {
	t.Helper()
	select {
	case r := <-res:
		return r
	case <-time.After(settle):
		t.Fatal("Wait did not return")
		return result{}
	}
}

// requireBlocked fails if an asynchronous Wait returns within grace.
func requireBlocked(t *testing.T, res <-chan result) {
	t.Helper()
	select {
	case r := <-res:
		t.Fatalf("Wait returned %+v; it should still block", r)
	case <-time.After(grace):
	}
}
