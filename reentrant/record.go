package reentrant

import (
	"fmt"
)

// Waiter is one call waiting in a lock's queue.
type Waiter struct {
	// ID names the waiter among the lock's waiters; it must contain neither
	// a space nor a comma (a grant message's address lists the IDs of its
	// waiters, separated by commas). Empty means the call does not queue.
	ID string
	// Channel is where its grant is published: Keys.GrantChannel of its
	// client.
	Channel string
	// Alive is its client's liveness key (Keys.AliveKey) where the
	// namespace judges liveness by key, empty otherwise. Use Keys.Waiter.
	Alive string
	// Unqueued makes a plain lock's acquire (Keys.Acquire, AcquireNew) a
	// look as this waiter that does not join the queue: it finds and
	// claims a grant the waiter was handed while queued, as any look does,
	// and takes a free lock only where nobody is queued before it. Where
	// it does not hold the lock after the call, it leaves the waiter's
	// record in the wake records (Keys.Wake) instead of the queue: never
	// granted from there, but woken once by a release that frees the lock
	// (Keys.ReleaseWaking, a leave), until the waiter's liveness TTL (the
	// liveness key's, else its lease) from this look, or until its leave
	// (Keys.Leave) or a look that holds takes it out. Other scripts ignore
	// it. A quorum call looks so on the nodes where it could keep no grant.
	Unqueued bool
	// Wakes says the waiter's looks may have left a wake record (see
	// Unqueued): each of its looks takes it out, and only an Unqueued one
	// leaves it again. A queued look of a waiter that has none is spared
	// that command. A quorum call's looks all have it set, since the node
	// it waits on moves.
	Wakes bool
}

// record is w's record for owner, asking for a lease of leaseMs, where a
// liveness key lasts aliveMs (zero where there is none): its element of
// the lock's queue, with all its grant needs, so that a grant reads the
// queue's head with one LINDEX and no other lookup.
//
// This is the record format's one definition: record writes it,
// parseWaiter in lua/record.lua reads it, and TestRecordRoundTrip holds
// the two to it. Six fields separated by single spaces, then three strings
// back to back:
//
//	<id> <lease> <unconfirmed> <given> <channel length> <alive length> <channel><alive><owner>
//
//	id           the waiter's ID; it has no space
//	lease        the lease the hold asks for, in ms, in decimal
//	unconfirmed  the lease a grant gives until the waiter confirms it, in
//	             ms: the lease, or less where liveness is judged by key (a
//	             waiter that crashed while its liveness key lived then
//	             holds the lock that long, not its whole lease)
//	given        1 when the owner is given, 0 when it was made for the
//	             one call
//	lengths      the byte lengths of the channel and the liveness key, in
//	             decimal
//	channel      where the grant is published
//	alive        the liveness key, empty where there is none
//	owner        the owner the hold is granted to: the rest, any bytes
//
// The lengths make any channel, key and owner read back whatever bytes
// they hold. The same call always writes the same record, which is how it
// finds itself in the queue (LPOS) and leaves it (LREM).
//
// A waiter of a shared resource (a read-write lock, a semaphore:
// SharedKeys) has the same record behind two more fields, written by
// sharedRecord and read by parseSharedWaiter:
//
//	<mode> <weight> <id> <lease> ...
//
//	mode    what it asks for: r (read), w (write) or p (permits); see Mode
//	weight  how much of the resource's size it takes, in decimal: 1 for a
//	        read, WriteWeight for a write, the permits asked for
func (w Waiter) record(owner string, leaseMs, aliveMs int64, givenOwner bool) string {
	unconfirmed := leaseMs
	if w.Alive != "" && aliveMs > 0 {
		unconfirmed = min(leaseMs, aliveMs)
	}
	return fmt.Sprintf("%s %d %d %s %d %d %s%s%s", w.ID, leaseMs, unconfirmed, wireFlag(givenOwner),
		len(w.Channel), len(w.Alive), w.Channel, w.Alive, owner)
}

// sharedRecord is w's record in the queue of a shared resource, for
// owner asking for weight in mode: record's, behind the mode and the weight
// (see record for the format).
func (w Waiter) sharedRecord(mode Mode, weight int64, owner string, leaseMs, aliveMs int64, givenOwner bool) string {
	return fmt.Sprintf("%s %d %s", mode, weight, w.record(owner, leaseMs, aliveMs, givenOwner))
}
