package notify

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The replies to SUBSCRIBE, UNSUBSCRIBE, SUBSCRIBE of one channel arrive in
// that order; only the last confirms, and an unasked UNSUBSCRIBE of a
// referenced channel asks for a reconnect.
func TestAckConfirmsOnlyTheLastSubscribe(t *testing.T) {
	h := newHub(backend{}, 0)
	defer h.Close()
	c := &conn{hub: h, sent: map[string]pending{}}
	e := &entry{channel: "ch", conn: c, refs: 1, ready: make(chan struct{})}
	h.entries["ch"] = e
	c.count("ch", pending{subs: 1})
	c.count("ch", pending{unsubs: 1})
	c.count("ch", pending{subs: 1})

	require.True(t, h.ack(c, "subscribe", "ch"))
	require.False(t, e.confirmed, "the first reply answers the dropped reference")
	require.True(t, h.ack(c, "unsubscribe", "ch"))
	require.False(t, e.confirmed)
	require.True(t, h.ack(c, "subscribe", "ch"))
	require.True(t, e.confirmed)
	require.Empty(t, c.sent)

	require.False(t, h.ack(c, "sunsubscribe", "ch"), "the server dropped a referenced channel")
	require.True(t, h.ack(c, "sunsubscribe", "gone"), "nobody references it")
	require.True(t, h.ack(c, "ssubscribe", "unasked"))
}

// After a lost subscription is confirmed again, every waiter wakes and the
// references not waiting get a permit each.
func TestConfirmAfterLossWakesEveryone(t *testing.T) {
	e := &entry{refs: 3, ready: make(chan struct{})}
	e.confirm()
	w := make(chan struct{}, 1)
	e.waiters = append(e.waiters, w)

	e.lose()
	e.lose() // a second loss before the confirmation changes nothing
	e.confirm()
	require.Len(t, w, 1)
	require.Empty(t, e.waiters)
	require.Equal(t, 2, e.permits)

	fresh := &entry{refs: 2, ready: make(chan struct{})}
	fresh.lose()
	fresh.confirm()
	require.Zero(t, fresh.permits, "nobody relied on a subscription never confirmed")
}
