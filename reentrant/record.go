package reentrant

import (
	"fmt"
)

// Waiter is one call waiting in a lock's queue.
type Waiter struct {
	// ID names the waiter among the lock's waiters; it must not contain a
	// space. Empty means the call does not queue.
	ID string
	// Channel is where its grant is published: Keys.GrantChannel of its
	// client.
	Channel string
	// Alive is its client's liveness key (Keys.AliveKey) where the
	// namespace judges liveness by key, empty otherwise. Use Keys.Waiter.
	Alive string
}

// record is how w waits in the queue for owner, with a lease of ms: one
// list element holding all its grant needs, so that the grant reads the
// head with one LINDEX and no other lookup. Where liveness is judged by
// key, a grant's lease holds only for the key's TTL (aliveMs) until the
// waiter confirms it. The lengths make any owner, channel and key parse
// back (see parseWaiter in grant.lua), and the same call always writes the
// same record, which is how it finds itself in the queue and leaves it.
func (w Waiter) record(owner string, ms, aliveMs int64, shared bool) string {
	flag := "0"
	if shared {
		flag = "1"
	}
	unconfirmed := ms
	if w.Alive != "" && aliveMs > 0 {
		unconfirmed = min(ms, aliveMs)
	}
	return fmt.Sprintf("%s %d %d %s %d %d %s%s%s", w.ID, ms, unconfirmed, flag, len(w.Channel), len(w.Alive), w.Channel, w.Alive, owner)
}
