package notify

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// SubscribeEvery's subscriptions get every message of the channel whole,
// the addressed ones included, which still reach their addressee; and a
// message they took is not handed back as Unclaimed, nor what they never
// took when they close.
func TestSubscribeEveryGetsEveryMessage(t *testing.T) {
	forModes(t, func(t *testing.T, f *fixture) {
		var mu sync.Mutex
		var back []string
		be, err := newBackend(f.client(), f.mode)
		require.NoError(t, err)
		f.hub = newHub(be, Options{HealthCheckInterval: testInterval, Unclaimed: func(_, msg string) {
			mu.Lock()
			defer mu.Unlock()
			back = append(back, msg)
		}})
		t.Cleanup(func() { require.NoError(t, f.hub.Close()) })

		one, err := f.hub.SubscribeEvery(testCtx(t), "bare")
		require.NoError(t, err)
		two, err := f.hub.SubscribeEvery(testCtx(t), "bare")
		require.NoError(t, err)
		addressed := f.subscribe(t, "bare")
		require.EqualValues(t, 1, f.numsub(t, "bare"), "one Redis subscription for all three")

		f.publish(t, "bare", "0")
		f.publish(t, "bare", addressed.ID()+" x")
		for _, s := range []*Subscription{one, two} {
			for _, want := range []string{"0", addressed.ID() + " x"} {
				d, err := s.Wait(testCtx(t), settle)
				require.NoError(t, err)
				require.Equal(t, Delivery{Payload: want}, d)
			}
		}
		d, err := addressed.Wait(testCtx(t), settle)
		require.NoError(t, err)
		require.Equal(t, Delivery{Payload: "x"}, d)

		f.publish(t, "bare", "1")
		_, err = one.Wait(testCtx(t), settle)
		require.NoError(t, err)
		one.Close()
		two.Close() // "1" untaken: dropped, not handed back
		f.publish(t, "bare", "2")
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(back) > 0
		}, settle, 5*time.Millisecond)
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, []string{"2"}, back, "only a message nobody took is unclaimed")
	})
}

// A resync reaches SubscribeEvery's subscriptions too.
func TestConfirmAfterLossResyncsEverySubscription(t *testing.T) {
	s := &Subscription{every: true, signal: make(chan struct{}, 1)}
	e := &entry{ready: make(chan struct{}), mailbox: map[string]*Subscription{}}
	e.add(s)
	e.confirm()
	e.lose()
	e.confirm()
	require.Equal(t, []Delivery{{Resync: true}}, s.mail)
}
