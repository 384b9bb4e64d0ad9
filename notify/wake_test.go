package notify

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// A message goes to the subscription it names, and to no other.
func TestMessageGoesOnlyToItsAddressee(t *testing.T) {
	forModes(t, func(t *testing.T, f *fixture) {
		subs := []*Subscription{f.subscribe(t, "addr"), f.subscribe(t, "addr"), f.subscribe(t, "addr")}
		results := make([]<-chan result, len(subs))
		for i, s := range subs {
			results[i] = asyncWait(testCtx(t), s)
		}
		require.EqualValues(t, 1, f.send(t, subs[1]), "one connection receives it")
		require.Equal(t, result{d: Delivery{Payload: "hi"}}, await(t, results[1]))
		requireBlocked(t, results[0])
		requireBlocked(t, results[2])
	})
}

// Messages that came while nobody waited are kept, in order, for the next
// Waits.
func TestDeliveriesAreKeptInOrder(t *testing.T) {
	forModes(t, func(t *testing.T, f *fixture) {
		s := f.subscribe(t, "kept")
		for _, p := range []string{"1", "2", "3"} {
			f.publish(t, "kept", s.ID()+" "+p)
		}
		for _, p := range []string{"1", "2", "3"} {
			d, err := s.Wait(testCtx(t), settle)
			require.NoError(t, err)
			require.Equal(t, p, d.Payload)
		}
		_, err := s.Wait(testCtx(t), grace)
		require.ErrorIs(t, err, ErrWaitTimeout)
	})
}

// A message nobody claims goes back to the hub's owner: one addressed to no
// subscription, and one left untaken in a subscription that closes.
func TestUnclaimedMessagesAreHandedBack(t *testing.T) {
	f := newFixture(t, Classic)
	var mu sync.Mutex
	var back []string
	be, err := newBackend(f.client(), Classic)
	require.NoError(t, err)
	f.hub = newHub(be, Options{HealthCheckInterval: testInterval, Unclaimed: func(channel, msg string) {
		mu.Lock()
		defer mu.Unlock()
		back = append(back, channel+": "+msg)
	}})
	t.Cleanup(func() { require.NoError(t, f.hub.Close()) })
	handedBack := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), back...)
	}

	s := f.subscribe(t, "grants")
	f.publish(t, "grants", "nobody 42")
	require.Eventually(t, func() bool { return len(handedBack()) == 1 }, settle, 5*time.Millisecond)
	require.Equal(t, []string{"grants: nobody 42"}, handedBack())

	f.send(t, s)
	require.Eventually(t, func() bool {
		f.hub.mu.Lock()
		defer f.hub.mu.Unlock()
		return len(s.mail) == 1
	}, settle, 5*time.Millisecond)
	s.Close()
	require.Equal(t, []string{"grants: nobody 42", "grants: " + s.ID() + " hi"}, handedBack())

	_, err = f.hub.Subscribe(testCtx(t), "grants", "dup")
	require.NoError(t, err)
	_, err = f.hub.Subscribe(testCtx(t), "grants", "dup")
	require.ErrorIs(t, err, ErrDuplicateID)
}

// Closing the last subscription of a channel returns at once, even while
// the connection is stuck: the UNSUBSCRIBE goes out in the background, and
// the hub's Close waits for it.
func TestCloseDoesNotWaitForTheUnsubscribe(t *testing.T) {
	f := newFixture(t, Classic)
	s := f.subscribe(t, "stuck")
	f.hub.io <- struct{}{} // a reconnect holds io
	start := time.Now()
	s.Close()
	require.Less(t, time.Since(start), grace, "Close waited for the connection")
	require.EqualValues(t, 1, f.numsub(t, "stuck"), "not unsubscribed yet")
	<-f.hub.io
	require.Eventually(t, func() bool { return f.numsub(t, "stuck") == 0 }, settle, 5*time.Millisecond)

	// A Subscribe between the Close and the UNSUBSCRIBE keeps the channel.
	s = f.subscribe(t, "kept")
	f.hub.io <- struct{}{}
	s.Close()
	again := f.subscribe(t, "kept")
	<-f.hub.io
	res := asyncWait(context.Background(), again)
	time.Sleep(grace) // the background unsubscribe has run, and sent nothing
	require.EqualValues(t, 1, f.numsub(t, "kept"))
	f.send(t, again)
	require.NoError(t, await(t, res).err)
}

// A message addressed to several subscriptions ("<id1>,<id2> <payload>")
// reaches each of them with the whole payload, and no other; an address no
// subscription claims is handed back as a message to that one address.
func TestMessageToSeveralAddressees(t *testing.T) {
	forModes(t, func(t *testing.T, f *fixture) {
		var mu sync.Mutex
		var back []string
		be, err := newBackend(f.client(), f.mode)
		require.NoError(t, err)
		f.hub = newHub(be, Options{HealthCheckInterval: testInterval, Unclaimed: func(channel, msg string) {
			mu.Lock()
			defer mu.Unlock()
			back = append(back, channel+": "+msg)
		}})
		t.Cleanup(func() { require.NoError(t, f.hub.Close()) })

		subs := []*Subscription{f.subscribe(t, "multi"), f.subscribe(t, "multi"), f.subscribe(t, "multi")}
		require.EqualValues(t, 1, f.publish(t, "multi", subs[0].ID()+","+subs[2].ID()+",gone {\"x\": 1, \"y\": 2}"),
			"one message, one connection")
		for _, s := range []*Subscription{subs[0], subs[2]} {
			d, err := s.Wait(testCtx(t), settle)
			require.NoError(t, err)
			require.Equal(t, Delivery{Payload: `{"x": 1, "y": 2}`}, d)
		}
		_, err = subs[1].Wait(testCtx(t), grace)
		require.ErrorIs(t, err, ErrWaitTimeout, "not addressed to it")
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(back) == 1
		}, settle, 5*time.Millisecond)
		require.Equal(t, []string{`multi: gone {"x": 1, "y": 2}`}, back)
	})
}

// An ID that an address could not name (a space ends the address, a comma
// separates its IDs) is refused.
func TestSubscribeRefusesUnaddressableIDs(t *testing.T) {
	f := newFixture(t, Classic)
	for _, id := range []string{"a b", "a,b", ",", " "} {
		_, err := f.hub.Subscribe(testCtx(t), "ids", id)
		require.ErrorIs(t, err, ErrInvalidID, "%q", id)
	}
	require.Zero(t, f.hub.Channels(), "nothing subscribed")
}

// A message that arrives for a channel the hub no longer serves on that
// connection (its entry went just before the UNSUBSCRIBE reached Redis) is
// handed back one address at a time, as route hands back an unclaimed
// address of several: its owner reads each as addressed to one waiter.
func TestUnservedMessageToSeveralIsHandedBackPerAddress(t *testing.T) {
	var back []string
	h := newHub(backend{}, Options{Unclaimed: func(channel, msg string) { back = append(back, channel+": "+msg) }})
	defer h.cancel()
	h.dispatch(nil, &redis.Message{Channel: "gone", Payload: "a,b {}"})
	h.dispatch(nil, &redis.Message{Channel: "gone", Payload: "c {}"})
	require.Equal(t, []string{"gone: a {}", "gone: b {}", "gone: c {}"}, back)
}
