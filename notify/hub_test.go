package notify

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func TestNewRejectsBadArguments(t *testing.T) {
	_, err := New(nil, Options{})
	require.ErrorIs(t, err, ErrNilClient)

	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	_, err = New(rdb, Options{Mode: Mode(7)})
	require.Error(t, err)

	// A Ring panics when asked for a pub/sub connection with no channel.
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	defer ring.Close()
	_, err = New(ring, Options{})
	require.ErrorIs(t, err, ErrUnsupportedClient)
}

// A Subscribe that returned is live on the server at once: no Eventually.
func TestSubscribeReturnsConfirmed(t *testing.T) {
	forModes(t, func(t *testing.T, f *fixture) {
		f.subscribe(t, "confirmed")
		require.EqualValues(t, 1, f.numsub(t, "confirmed"))
	})
}

func TestMessageReachesItsAddressee(t *testing.T) {
	forModes(t, func(t *testing.T, f *fixture) {
		s := f.subscribe(t, "wake")
		res := asyncWait(testCtx(t), s)
		require.EqualValues(t, 1, f.send(t, s))
		require.Equal(t, result{d: Delivery{Payload: "hi"}}, await(t, res))
	})
}

func TestWaitTimesOut(t *testing.T) {
	f := newFixture(t, Classic)
	s := f.subscribe(t, "timeout")
	const timeout = 150 * time.Millisecond
	start := time.Now()
	_, err := s.Wait(testCtx(t), timeout)
	elapsed := time.Since(start)
	require.ErrorIs(t, err, ErrWaitTimeout)
	require.GreaterOrEqual(t, elapsed, timeout)
	require.Less(t, elapsed, timeout+500*time.Millisecond)
}

func TestWaitHonoursContext(t *testing.T) {
	f := newFixture(t, Classic)
	s := f.subscribe(t, "ctx")
	ctx, cancel := context.WithCancel(context.Background())
	res := asyncWait(ctx, s)
	cancel()
	require.ErrorIs(t, await(t, res).err, context.Canceled)

	_, err := f.hub.Subscribe(ctx, "other", "")
	require.ErrorIs(t, err, context.Canceled)
}

func TestCloseWakesWaitersAndEndsTheHub(t *testing.T) {
	f := newFixture(t, Classic)
	var results []<-chan result
	for i := range 3 {
		s := f.subscribe(t, fmt.Sprint("close-", i))
		results = append(results, asyncWait(testCtx(t), s))
	}
	s := f.subscribe(t, "close-0")

	require.NoError(t, f.hub.Close())
	for _, res := range results {
		require.ErrorIs(t, await(t, res).err, ErrClosed)
	}
	_, err := s.Wait(testCtx(t), time.Second)
	require.ErrorIs(t, err, ErrClosed)
	_, err = f.hub.Subscribe(testCtx(t), "late", "")
	require.ErrorIs(t, err, ErrClosed)
	require.NoError(t, f.hub.Close(), "Close is idempotent")
	require.Eventually(t, func() bool { return f.pubsubClients(t) == 0 }, settle, 10*time.Millisecond)
}

func TestRefCounting(t *testing.T) {
	forModes(t, func(t *testing.T, f *fixture) {
		a := f.subscribe(t, "ref")
		b := f.subscribe(t, "ref")
		require.EqualValues(t, 1, f.numsub(t, "ref"))
		require.Equal(t, 1, f.hub.Channels())

		a.Close()
		a.Close() // idempotent: must not drop b's reference
		require.Equal(t, 1, f.hub.Channels(), "b still holds the channel")
		require.EqualValues(t, 1, f.numsub(t, "ref"))
		_, err := a.Wait(testCtx(t), time.Second)
		require.ErrorIs(t, err, ErrSubscriptionClosed)

		b.Close() // the UNSUBSCRIBE goes out in the background
		require.Eventually(t, func() bool { return f.hub.Channels() == 0 && f.numsub(t, "ref") == 0 },
			settle, 10*time.Millisecond)

		f.subscribe(t, "ref") // subscribe again after unsubscribe
		require.EqualValues(t, 1, f.numsub(t, "ref"))
	})
}

// All channels share one connection, kept while idle, so that a churn of
// subscriptions does not dial each time.
func TestOneConnectionForAllChannels(t *testing.T) {
	f := newFixture(t, Classic)
	for i := range 100 {
		f.subscribe(t, fmt.Sprint("many-", i))
	}
	require.Equal(t, 1, f.pubsubClients(t))
	require.EqualValues(t, 1, f.numsub(t, "many-99"))

	before := f.dials(t)
	for range 20 {
		s, err := f.hub.Subscribe(testCtx(t), "churn", "")
		require.NoError(t, err)
		s.Close()
	}
	require.Equal(t, before, f.dials(t))
}

// A healthy idle connection answers its PINGs and is kept: no reconnect, and
// so no spurious wake-up.
func TestIdleConnectionIsKept(t *testing.T) {
	f := newFixture(t, Classic)
	s := f.subscribe(t, "idle")
	before := f.dials(t)
	res := asyncWait(testCtx(t), s)
	select {
	case r := <-res:
		t.Fatalf("Wait returned %+v on an idle, healthy connection", r)
	case <-time.After(6 * testInterval):
	}
	require.Equal(t, before, f.dials(t))
}

// A SUBSCRIBE written to a server that does not answer is not confirmed, so
// Subscribe must not return.
func TestSubscribeWaitsForConfirmation(t *testing.T) {
	f := newFixture(t, Classic)
	f.subscribe(t, "first") // the connection is up
	f.srv.Pause()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := f.hub.Subscribe(ctx, "second", "")
	f.srv.Resume()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, 1, f.hub.Channels(), "a failed Subscribe keeps no reference")
	f.subscribe(t, "second")
	require.EqualValues(t, 1, f.numsub(t, "second"))
}

// Concurrent subscribe and close on one channel interleave SUBSCRIBE and
// UNSUBSCRIBE on the wire; the survivor must be confirmed for real.
func TestChurnKeepsServerStateRight(t *testing.T) {
	forModes(t, func(t *testing.T, f *fixture) {
		errs := make(chan error, 4)
		for range 4 {
			go func() {
				for range 50 {
					s, err := f.hub.Subscribe(testCtx(t), "churn", "")
					if err != nil {
						errs <- err
						return
					}
					s.Close()
				}
				errs <- nil
			}()
		}
		for range 4 {
			require.NoError(t, <-errs)
		}
		s := f.subscribe(t, "churn")
		require.EqualValues(t, 1, f.numsub(t, "churn"))
		res := asyncWait(testCtx(t), s)
		f.send(t, s)
		require.NoError(t, await(t, res).err)
	})
}

func TestRouteErrorFailsSubscribe(t *testing.T) {
	boom := errors.New("no route")
	h := newHub(backend{route: func(context.Context, string) (string, error) { return "", boom }}, Options{})
	defer h.Close()
	_, err := h.Subscribe(testCtx(t), "ch", "")
	require.ErrorIs(t, err, boom)
	require.Zero(t, h.Channels())
}
