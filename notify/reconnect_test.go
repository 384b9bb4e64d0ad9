package notify

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// requireRestored proves the subscription on channel works again: a new
// message reaches it.
func requireRestored(t *testing.T, f *fixture, s *Subscription) {
	t.Helper()
	require.EqualValues(t, 1, f.send(t, s))
	requirePayload(t, s)
}

// requirePayload waits for the payload "hi" on s, past any resyncs: a
// subscription that lived through moves may have several queued.
func requirePayload(t *testing.T, s *Subscription) {
	t.Helper()
	for {
		d, err := s.Wait(testCtx(t), settle)
		require.NoError(t, err)
		if !d.Resync {
			require.Equal(t, "hi", d.Payload)
			return
		}
	}
}

var resync = result{d: Delivery{Resync: true}}

// Messages published while the connection was down are lost, so once the
// subscription is back every subscription gets a resync, waiting or not.
func TestKilledConnectionResyncsEveryone(t *testing.T) {
	forModes(t, func(t *testing.T, f *fixture) {
		waiting, idle := f.subscribe(t, "kill"), f.subscribe(t, "kill")
		res := asyncWait(testCtx(t), waiting)

		f.killPubSub(t)
		require.Equal(t, resync, await(t, res))
		d, err := idle.Wait(testCtx(t), grace)
		require.NoError(t, err)
		require.True(t, d.Resync, "the idle subscription has its resync")
		require.EqualValues(t, 1, f.numsub(t, "kill"))
		requireRestored(t, f, waiting)
	})
}

// While the server is down a new channel cannot be confirmed, so Subscribe
// waits; once the server is back the waiters are woken.
func TestServerRestart(t *testing.T) {
	f := newFixture(t, Classic)
	s := f.subscribe(t, "restart")
	res := asyncWait(testCtx(t), s)

	f.srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := f.hub.Subscribe(ctx, "during-gap", "")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, 1, f.hub.Channels())
	requireBlocked(t, res) // nothing is confirmed yet, so nobody may retry

	f.srv.Restart()
	require.Equal(t, resync, await(t, res))
	requireRestored(t, f, s)
	f.subscribe(t, "during-gap")
	require.EqualValues(t, 1, f.numsub(t, "during-gap"))
}

// A server that stops answering is detected by the health check; the hub
// reconnects once it answers again and wakes its waiters.
func TestHealthCheckReplacesSilentConnection(t *testing.T) {
	f := newFixture(t, Classic)
	s := f.subscribe(t, "silent")
	res := asyncWait(testCtx(t), s)

	f.srv.Pause()
	// Resume only once the health check has given the connection up, so
	// the test does not depend on how long detection takes under -race.
	require.Eventually(t, func() bool {
		f.hub.mu.Lock()
		defer f.hub.mu.Unlock()
		return !f.hub.entries["silent"].confirmed
	}, settle, 10*time.Millisecond, "the silent connection is given up while the server is paused")
	f.srv.Resume()
	require.Equal(t, resync, await(t, res))
	requireRestored(t, f, s)
	require.Eventually(t, func() bool { return f.pubsubClients(t) == 1 }, settle, 10*time.Millisecond)
}

// Channels routed to different keys get one connection each; after a
// reconnect a channel whose route changed moves, and a connection left
// without channels is closed.
func TestRoutedConnections(t *testing.T) {
	f := newFixture(t, Sharded)
	var mu sync.Mutex
	routes := map[string]string{"a1": "A", "a2": "A", "b1": "B"}
	be, err := newBackend(f.client(), Sharded)
	require.NoError(t, err)
	be.route = func(_ context.Context, channel string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		return routes[channel], nil
	}
	f.hub = newHub(be, Options{HealthCheckInterval: testInterval})
	t.Cleanup(func() { require.NoError(t, f.hub.Close()) })

	a1, b1 := f.subscribe(t, "a1"), f.subscribe(t, "b1")
	f.subscribe(t, "a2").Close()
	require.Equal(t, 2, f.pubsubClients(t))
	requireRestored(t, f, a1)
	requireRestored(t, f, b1)

	mu.Lock()
	routes["a1"] = "B"
	mu.Unlock()
	f.killPubSub(t)
	require.Eventually(t, func() bool {
		f.hub.mu.Lock()
		defer f.hub.mu.Unlock()
		return len(f.hub.conns) == 1 && f.hub.entries["a1"].confirmed
	}, settle, 10*time.Millisecond)
	require.Eventually(t, func() bool { return f.pubsubClients(t) == 1 }, settle, 10*time.Millisecond)
	for _, s := range []*Subscription{a1, b1} {
		d, err := s.Wait(testCtx(t), grace)
		require.NoError(t, err)
		require.True(t, d.Resync, "a resync for the subscription not waiting")
		requireRestored(t, f, s)
	}
}

// Close ends the reconnect loop of a hub whose server is gone.
func TestCloseDuringOutage(t *testing.T) {
	f := newFixture(t, Classic)
	res := asyncWait(testCtx(t), f.subscribe(t, "outage"))
	f.srv.Stop()
	time.Sleep(3 * minBackoff) // let the reader fall into its reconnect back-off
	start := time.Now()
	require.NoError(t, f.hub.Close())
	require.Less(t, time.Since(start), time.Second)
	require.ErrorIs(t, await(t, res).err, ErrClosed)
}

// Resubscribed is told when a lost subscription is confirmed again (the
// server was away: a client must check what it kept), by the time its
// resync is delivered; a first confirmation tells it nothing.
func TestResubscribedToldOnReconnectOnly(t *testing.T) {
	f := newFixture(t, Classic)
	told := make(chan struct{}, 4)
	h, err := New(f.client(), Options{HealthCheckInterval: testInterval, Resubscribed: func() { told <- struct{}{} }})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, h.Close()) })
	s, err := h.Subscribe(testCtx(t), "again", "a")
	require.NoError(t, err)
	t.Cleanup(s.Close)
	select {
	case <-told:
		t.Fatal("told of a first subscription")
	case <-time.After(grace):
	}

	f.srv.Restart()
	d, err := s.Wait(testCtx(t), settle)
	require.NoError(t, err)
	require.True(t, d.Resync)
	select {
	case <-told:
	case <-time.After(settle):
		t.Fatal("not told of the subscription confirmed again")
	}
}
