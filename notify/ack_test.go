package notify

import (
	"errors"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/notify/slot"
)

// The replies to SUBSCRIBE, UNSUBSCRIBE, SUBSCRIBE of one channel arrive in
// that order; only the last confirms, and an unasked UNSUBSCRIBE of a
// referenced channel moves it, once.
func TestAckConfirmsOnlyTheLastSubscribe(t *testing.T) {
	h := newHub(backend{}, Options{})
	defer h.Close()
	c := &conn{hub: h, sent: map[string]pending{}}
	e := &entry{channel: "ch", conn: c, refs: 1, ready: make(chan struct{})}
	h.entries["ch"] = e
	c.count("ch", pending{subs: 1})
	c.count("ch", pending{unsubs: 1})
	c.count("ch", pending{subs: 1})

	require.Nil(t, movedBy(h, c, "subscribe", "ch"))
	require.False(t, e.confirmed, "the first reply answers the dropped reference")
	require.Nil(t, movedBy(h, c, "unsubscribe", "ch"))
	require.False(t, e.confirmed)
	require.Nil(t, movedBy(h, c, "subscribe", "ch"))
	require.True(t, e.confirmed)
	require.Empty(t, c.sent)

	require.Equal(t, []*entry{e}, movedBy(h, c, "sunsubscribe", "ch"), "the server dropped a referenced channel")
	require.True(t, e.moving)
	require.False(t, e.confirmed, "lost until subscribed on the new master")
	require.Nil(t, movedBy(h, c, "sunsubscribe", "ch"), "already moving")
	require.Nil(t, movedBy(h, c, "sunsubscribe", "gone"), "nobody references it")
	require.Nil(t, movedBy(h, c, "ssubscribe", "unasked"))
}

// The server drops a migrated slot's channels with one unasked SUNSUBSCRIBE
// each; the first moves the whole slot, so the rest start no second move.
func TestUnaskedUnsubscribeMovesItsSlotOnce(t *testing.T) {
	h := newHub(backend{}, Options{})
	defer h.Close()
	c := &conn{hub: h, sent: map[string]pending{}}
	entries := map[string]*entry{}
	for _, ch := range []string{"{a}1", "{a}2", "{b}1"} {
		e := &entry{channel: ch, conn: c, refs: 1, ready: make(chan struct{})}
		e.confirm()
		h.entries[ch], entries[ch] = e, e
	}
	require.ElementsMatch(t, []*entry{entries["{a}1"], entries["{a}2"]}, movedBy(h, c, "sunsubscribe", "{a}1"))
	require.Empty(t, movedBy(h, c, "sunsubscribe", "{a}2"), "its slot is already moving")
	require.False(t, entries["{b}1"].moving, "another slot stays")
}

// A MOVED reply moves every entry of its slot on that connection, once, and
// drops the commands still unanswered there; other slots stay.
func TestMovedReplyMovesItsSlot(t *testing.T) {
	h := newHub(backend{}, Options{})
	defer h.Close()
	c := &conn{hub: h, sent: map[string]pending{}}
	same, other := "{a}1", "{b}1"
	require.NotEqual(t, slot.Of(same), slot.Of(other))
	entries := map[string]*entry{}
	for _, ch := range []string{same, "{a}2", other} {
		e := &entry{channel: ch, conn: c, refs: 1, ready: make(chan struct{})}
		e.confirm()
		h.entries[ch], entries[ch] = e, e
	}
	c.count("{a}3", pending{subs: 1})
	c.count(other, pending{unsubs: 1})

	slot, ok := movedSlot(redisError("MOVED " + strconv.Itoa(slot.Of(same)) + " 127.0.0.1:7001"))
	require.True(t, ok)
	require.ElementsMatch(t, []*entry{entries[same], entries["{a}2"]}, h.slotMoved(c, slot))
	require.Equal(t, map[string]pending{other: {unsubs: 1}}, c.sent)
	require.False(t, entries[same].confirmed)
	require.True(t, entries[other].confirmed)
	require.Empty(t, h.slotMoved(c, slot), "a move is under way")

	_, ok = movedSlot(redisError("ASK 1 127.0.0.1:7001"))
	require.False(t, ok)
	_, ok = movedSlot(errors.New("MOVED 1 127.0.0.1:7001"))
	require.False(t, ok, "not a reply from the server")
}

// redisError is an error reply as go-redis returns it.
type redisError string

func (e redisError) Error() string { return string(e) }
func (redisError) RedisError()     {}

// After a lost subscription is confirmed again, every mailbox gets one
// resync; a subscription never confirmed had nobody relying on it.
func TestConfirmAfterLossResyncsEveryMailbox(t *testing.T) {
	a := &Subscription{id: "a", signal: make(chan struct{}, 1)}
	b := &Subscription{id: "b", signal: make(chan struct{}, 1)}
	e := &entry{ready: make(chan struct{}), mailbox: map[string]*Subscription{}}
	e.add(a)
	e.add(b)
	e.confirm()

	e.lose()
	e.lose() // a second loss before the confirmation changes nothing
	e.confirm()
	require.Equal(t, []Delivery{{Resync: true}}, a.mail)
	require.Equal(t, []Delivery{{Resync: true}}, b.mail)

	fresh := &entry{ready: make(chan struct{}), mailbox: map[string]*Subscription{}}
	c := &Subscription{id: "c", signal: make(chan struct{}, 1)}
	fresh.add(c)
	fresh.lose()
	fresh.confirm()
	require.Empty(t, c.mail, "nobody relied on a subscription never confirmed")
}

// movedBy is ack's first result: the entries that must move.
func movedBy(h *Hub, c *conn, kind, channel string) []*entry {
	moved, _ := h.ack(c, kind, channel)
	return moved
}
