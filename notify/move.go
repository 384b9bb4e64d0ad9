package notify

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/notify/slot"
)

// When a cluster slot moves, the client learns of it lazily: ReloadState only
// starts a reload. A moved channel's new route is polled every movePoll, for
// at most moveWait; a channel whose route has not changed by then goes to the
// old master again, and that master's MOVED reply starts another round.
const (
	movePoll = 20 * time.Millisecond
	moveWait = time.Second
)

// movedSlot reports whether err is a MOVED reply, and for which slot.
func movedSlot(err error) (int, bool) {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return 0, false
	}
	fields := strings.Fields(rerr.Error()) // "MOVED <slot> <host:port>"
	if len(fields) != 3 || fields[0] != "MOVED" {
		return 0, false
	}
	slot, convErr := strconv.Atoi(fields[1])
	return slot, convErr == nil
}

// slotMoved applies a MOVED reply read from c: c's node does not serve moved,
// so every command c sent on a channel in that slot fails, and every entry c
// serves there must move. It returns the entries that must move.
func (h *Hub) slotMoved(c *conn, moved int) []*entry {
	h.mu.Lock()
	defer h.mu.Unlock()
	// Replies come in order, so the commands still unanswered on this slot
	// were all sent after it moved: each gets a MOVED, none a confirmation.
	for channel := range c.sent {
		if slot.Of(channel) == moved {
			delete(c.sent, channel)
		}
	}
	return h.moveSlot(c, moved)
}

// moveSlot marks every entry c serves in slot moved as moving, and returns
// those whose move starts now. The server drops a migrated slot's channels
// one unsolicited SUNSUBSCRIBE at a time; moving the whole slot on the
// first one makes one reroute per slot, not one per channel. h.mu must be
// held.
func (h *Hub) moveSlot(c *conn, moved int) []*entry {
	var moving []*entry
	for _, e := range h.entries {
		if e.conn == c && slot.Of(e.channel) == moved && e.move() {
			moving = append(moving, e)
		}
	}
	return moving
}

// reroute subscribes the moved entries again, each on the connection of
// the master that now serves it, in a goroutine of its own: waiting for the
// client to see the new topology must not stall the reader of from, whose
// other channels did not move. A connection left serving nothing is closed.
func (h *Hub) reroute(from *conn, moved ...*entry) {
	if len(moved) == 0 {
		return
	}
	h.wg.Add(1) // the caller is a reader, so the count is not zero
	go func() {
		defer h.wg.Done()
		keys := h.awaitRoutes(from.key, moved)
		if h.lockIO(h.life) != nil {
			return
		}
		defer h.unlockIO()
		for i, e := range moved {
			if h.stillMoving(e) {
				h.subscribeVia(e, keys[i])
			}
		}
		h.keepIfServing(from)
	}()
}

// awaitRoutes asks the client to reload the topology until none of moved
// routes to old any more, or moveWait passes, and returns their routes.
func (h *Hub) awaitRoutes(old string, moved []*entry) []string {
	keys := make([]string, len(moved))
	deadline := time.Now().Add(moveWait)
	for {
		// Each call starts a reload, or asks for one more after the reload
		// in flight, which may have read the topology before the move.
		h.be.refresh(h.life)
		settled := true
		for i, e := range moved {
			key, err := h.be.route(h.life, e.channel)
			if err != nil {
				key = old
			}
			keys[i] = key
			settled = settled && key != old
		}
		if settled || !time.Now().Before(deadline) || !h.sleep(movePoll) {
			return keys
		}
	}
}

// stillMoving reports whether e still waits for its move: its last
// reference may have gone, or a reconnect may have subscribed it already.
func (h *Hub) stillMoving(e *entry) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.entries[e.channel] == e && e.moving
}
