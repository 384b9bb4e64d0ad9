// Package rlock is baton's public API: a reentrant distributed lock on Redis
// whose waiters are woken by pub/sub instead of sleep-polling, kept alive by a
// watchdog, and fenced by monotonically rising tokens.
//
//	c, err := rlock.New(rdb)                 // one Client per process
//	err = c.Do(ctx, "orders", func(ctx context.Context) error {
//		return work(ctx) // ctx ends if the lock is lost, or the caller's ctx ends
//	})
//
// It owns the holds of a process: a hold is one owner's hold on one lock,
// one object that alone owns the lease, its renewal, its handles and the
// cause of its end. A Lock is a thin handle of a hold. The invariant it
// guards above all: a lock never has two holders that both believe they hold
// it. Redis enforces exclusion; the client makes sure a holder's Context has
// ended before Redis can expire its lease, and the fencing token covers the
// pause that can fall between a holder's last look and its write.
//
// Ownership travels in a context. A Lock call whose ctx carries a handle of
// the same lock (its Context, or one derived from it) re-enters through that
// handle: at once when no other re-entry through it is held, otherwise after
// it, so nested calls never wait and goroutines forked from one Context take
// turns. A call with no handle and no WithOwner owner in its ctx gets a fresh
// owner of its own, so calls made with unrelated contexts never share a
// lock. WithOwner makes ownership explicit and shareable: callers with one
// owner are one owner.
//
// A handle's Context ends only with its handle: when it is unlocked, or
// when the hold is lost (or its own fixed lease runs out). It keeps the
// values of the ctx given to the acquire, so ownership goes on travelling,
// but not its cancellation, which bounds the wait only: a read downgraded
// from a write, or a re-entry whose outer handle is unlocked first, keeps
// its Context while it holds. Do's function is the exception that honours
// both: its ctx also ends with the caller's. Each handle has one type,
// which FromContext (Lock: plain and RW locks) and PermitFromContext
// (Permit) find.
//
// A hold is valid until the send of its last confirmed acquire or renewal,
// plus the lease, less a drift margin (lease/100 + 2ms). Its Contexts end no
// later than that, with a cause matching ErrLockLost, and Context().Err()
// checks the clock itself, so a holder resuming from a pause sees the loss on
// its first look. Locks taken without WithLease use the watchdog lease (30s
// by default), renewed every third of it in batched pipelines.
//
// The same holds, waiter queue and watchdog serve a read-write lock
// (Client.RWLock) and a counting semaphore (Client.Semaphore), whose
// Permits are owned, leased, renewed and granted in strict FIFO order.
// LockAll takes several plain locks all or nothing (a LockSet), in one
// canonical order, waiting FIFO in each lock's queue (see "Lock sets"
// below); RW locks and semaphores cannot be members.
//
// On one deployment (New), Redis is a single primary: a failover can lose a
// lock, so pass Token() to the storage you protect and have it reject stale
// tokens. NewQuorum spans independent masters instead (Redlock's setting),
// with tokens that still rise from holder to holder (see Quorum mode below).
// It does not own the Redis client, the key layout and scripts (package
// reentrant), the pub/sub connections (package notify) or the renewal
// schedule (package watchdog); those are building blocks that may change
// before v1, and rlock is the API.
//
// # The client's side of the protocol
//
// The protocol's Redis side (keys, tokens, the baton pass, looks, liveness,
// draining, replay) is package reentrant's documentation. A Client adds
// what lives in a process:
//
// Taking. A Lock call finds its owner in its ctx, then runs one acquire. The
// uncontended call is that one script call: a call that may wait is
// subscribed as a waiter beforehand, where that costs no round trip (the
// client's grant line is subscribed for good), so the same acquire queues it
// if the lock is held. An owner made for the call needs no request ID: any
// hold it has is the call's own.
//
// Waiting. A waiter's subscription is confirmed before any acquire queues
// it; then the grant message alone makes its handle. It looks again after a
// resync, when the holder's lease should have run out, and at least every
// third of its lease (and of the liveness TTL, where liveness is judged by
// key, with a grant confirmed by a renewal in the background). A grant is
// valid from the send of the last look that found the waiter queued, never
// from the message's arrival; one whose validity has passed on arrival is
// given back at once, so that it passes on. Every grant names its waiter
// (a lock's granted key, a shared resource's hold) until the
// waiter's look claims it or its leave gives back its one count: a grant
// message is given back by that leave (handBack), a grant a look reported
// by a release. So a grant goes back once, and never with another call's
// count of the same owner. A waiter that stops waiting leaves the queue; at
// the head of a shared resource's queue, its leave admits those
// behind it that then fit. A grant that reaches the client after its
// waiter has gone is handed back the same way, unless a look had made it a
// hold here already.
//
// Holding. A confirmed acquire or renewal moves the hold's validity, which
// only rises; the hold ends at its validity unless a renewal moved it. The
// watchdog renews every hold with a live handle taken without WithLease,
// in one pipeline per batch, one script call per slot; it stops before the release of the last such
// handle is sent, so a hold being given up is never renewed again.
//
// Acknowledging. Where the master has replicas (or WithReplicaAcks asks),
// a grant or renewal counts only once replicas have acknowledged it: after
// its script, one pipeline on the same master writes a key in the hold's
// slot (Hash + ":ack") and sends WAIT. Replication is ordered, so that
// covers every earlier write of the master, whoever made it: a hand-off
// grant the releaser's script wrote, or the first run of a resent script.
// A grant not acknowledged is given back before Lock returns
// ErrNotReplicated; a renewal not acknowledged moves no validity. The
// give-back retries until Redis answers, so it may land on a replica
// promoted meanwhile, which never had the grant: it must be a no-op
// there. An acquire with a request ID (a re-entry, or a given owner's
// acquire, which may have re-entered a hold of the owner) is given back
// by a replay of it by its request ID, then a release of one count: where
// it never ran the replay runs it first, so the release never takes the
// count of the hold it re-entered. In Redisson's format the latch that
// replays it is kept until the acknowledgement is settled (acquireCall's
// pending), not dropped once the reply is in. Any other grant (a new
// owner's, a message's) is given back by a release by hold ID and owner:
// a no-op there, but for one gap not closed yet: for a message's grant to
// a given owner (WithOwner), a call of the same owner granted there
// meanwhile may get the lost grant's hold ID again, as the replica's
// hold-ID counter lost it too. A release
// needs none: one lost in a failover costs a stall of at most one lease.
//
// Checking after a reconnect. When a pub/sub connection of the client is
// confirmed again after it dropped (or its channels moved to another
// master), Redis was away and may be back without its data: a restart
// without persistence, a failover to a replica that lacked the holds. A
// waiter of another client may take a lock this client holds as soon as
// its own connection is back, so the client checks every hold at that
// moment rather than at its next renewal, a third of the lease away: the
// watchdog renews all its leases at once, and the holds it does not renew
// (WithLease) are checked by a renewal for 1 ms, which never shortens a
// lease. A hold Redis no longer has is cut off with ErrLockLost, about one
// round trip after the reconnect (plus the difference between the two
// clients' reconnect backoffs, at most notify's 1 s): a window that cannot
// be zero, since the other client's look and this check race, which is
// what fencing tokens are for. The client sees the reconnect on its
// pub/sub connection: where one grant line serves every lock (a single
// node, Sentinel, PUBLISH on a cluster) from the client's first wait on,
// and otherwise (SPUBLISH, Redisson's format) while it has a waiter. A
// client with no subscription (one that never waited) finds a loss at its
// next renewal, or at its lease's end for a hold WithLease.
//
// Ending. A hold ends once: released, when its last handle's release is
// confirmed; or cut off, when it is lost (its validity passed while a handle
// was still live, or a renewal, a check after a reconnect, a re-entry, an
// Unlock or a ForceUnlock found it not held) or its client closes. Every Context of the hold has ended
// before the end can be seen, and a loss is reported once, after that.
//
// Failing. A script call whose reply was lost may have run. An acquire
// that failed so is undone by replaying its request ID, which tells, then
// releasing what it held; an Unlock that failed so is retried by its
// caller under the first one's request ID, which replays it. Clean-ups run
// in the background and, since no caller is there to retry them, try again
// under the same request ID while Redis cannot be reached, up to the lease
// of what they give back; Close waits for them up to its own bound, then
// cancels them.
//
// Quorum mode. A Client from NewQuorum holds its holds in its own table and
// watchdog, as any Client; its resource (quorumLock) is the lock on each
// node, and each node is a Client of its own whose scripts, grant line and
// clean-ups of unclaimed grants serve it. Every call goes to every node at
// once and returns as soon as the answers decide it (a majority, or too
// many refusals for one): a paused or slow node delays none, but for
// Inspect and the leave of a call that gave up, which wait for every node
// (Inspect up to the lease or the node's read timeout, a leave up to
// leaveWait), and a look, which, once a majority granted, listens for the
// other nodes as long again as that took (fanOut's linger: a hold made on
// a bare majority dies with any one of its nodes), and waits for a node's
// answer up to the node's read timeout (answerWithin; go-redis retries a
// read that timed out once, so 3 to 6 s with its defaults), except for a
// node that failed the call's last look: that one it waits for only until
// every other node answered (lookAs), so a paused node costs a waiting
// call one such wait, not one a look. A waiter's
// subscription that answers after its call stopped waiting for it still
// joins the call (anyWake.add). A look is the protocol's two rounds (package reentrant,
// Quorum mode), or a renewal of a grant the waiter keeps; its waiting is
// the attempt's own loop, with
// every node's grant line as one wake source (anyWake) and every message a
// nudge to look (subscribed.grants is false): a grant to it on a node it
// is queued on, or, on a node past the one it waits on, where its looks
// leave a wake record instead (reentrant.Waiter.Unqueued), the wake-up a
// hold's release sends there when it frees the node (Keys.ReleaseWaking;
// a give-back of a grant a look could not keep wakes nobody). So a waiter
// whose node pauses after its look still hears the releases of the
// others. The watchdog's batch is one
// pipeline per node; a hold's validity moves once a majority confirmed
// its renewal. A reply to a look, a commit or a re-entry that comes after
// its call stopped listening is never dropped: a grant or commit joins the
// hold its look made, or is given back (a release that begins while a
// node's raise to the hold's token is still under way sends a copy of the
// raise itself, then releases the node where the raise says it holds: so
// an Unlock right after Lock finds the hold on every node that granted
// it, without waiting for a reply that may be lost; every copy of a raise
// goes under one request ID, and the first to run decides for all, so no
// copy that comes late moves the ID of a count another call of the owner
// has there after the release), a failure is undone by replay,
// as on one node, and any other reply, once the call has left, leaves its
// node again (its acquire may have run after the leave, and left a queue
// place or wake record there); a release that failed there is resent. (A late renewal's
// reply is dropped: it only extends.) A look of a call whose owner was
// made for it acquires on a node once the call's give-backs there have
// ended, and counts no grant the node merely reports (one an earlier look
// took, which its give-back or undo will release: see reentrant's Quorum
// mode): that release would take the node out of the look's hold.
//
// Lock sets. LockAll takes several plain locks all or nothing, as handles
// of ordinary holds, one per member, under one owner (WithOwner's, or one
// made for the call; a member held through ctx is re-entered through its
// handle). The members are taken in one canonical order, the cluster slot
// of the name, then the name: each name is its own hash tag (names cannot
// carry '{' or '}'), so a slot is CRC16(name) mod 16384, and names share
// one only by chance. A script may touch only one slot on a cluster, so
// there the members are taken one slot at a time; on a single node (or
// Sentinel) any members go in one script. One script takes the free
// members at the start of the order and stops at the first held or queued
// one; the call then waits for that member with the attempt and waiter
// loop of a single Lock (acquire.go, wait.go), holding what it has, and
// runs the next script for the members after it. Where one waiter serves
// every lock (grants on the client's one channel, liveness by receiver
// count: a single node) and the client keeps its grant line, a blocking
// call is that waiter before its script, which queues it at the member it
// stops at, so the wait costs no acquire of its own (waitQueued);
// elsewhere Lock's own acquire queues it, one round trip more. A set never releases and
// retries: every set and single Lock takes keys in the one order and
// waits FIFO, so nobody waits in a circle. A set that fails (ctx, TryLockAll,
// an error) gives back what it took, one script per slot, before it
// returns (as a waiter's leave: up to 250 ms, then in the background); so
// does a set that finds, before it returns, a member it took lost while it
// waited for a later one (the error matches ErrNotObtained and
// ErrLockLost, and names that member); a
// set script whose reply was lost is undone as an acquire is, by its
// replay (request ID, or an owner made for the call finding its own
// holds), then a release. One acknowledgement by replicas covers each set
// script. The watchdog renews the members as any holds, in one pipeline
// per round and one script call per slot (each chunk of up to 100): holds
// taken at different moments renew in different rounds for at most one
// tick, then together. The set's Context chains its members' (the last
// member's Context carries every member before it), and ends with the
// first member's end, its cause naming the member. Unlock sends the
// members' releases together, one script per slot, each member handed to
// its own next waiter, and finishes each handle as Lock.Unlock does; a
// retry resends the same scripts under the same request IDs.
//
// # Glossary
//
// Each of these words means one thing, in rlock and in reentrant:
//   - lock: a named resource in Redis, a hash of owner → hold count with a
//     lease.
//   - owner: the identity a hold is taken under (the hash field): made for
//     one call, set with WithOwner, or carried by a handle's Context.
//   - hold: one owner's hold on one lock within one Client; in Redis, that
//     owner's field. Its hold count is the field's value.
//   - handle: what one successful Lock or TryLock returns (a *Lock; a
//     Permit for a semaphore, never seen as a Lock); a hold has one or
//     more handles.
//   - waiter: one call queued in Redis for a lock; its queue entry is its
//     record.
//   - grant: a release (or look, leave, force-release) making the oldest
//     live waiter the holder; also the message that tells it. The grant
//     line is the client's subscription its waiters' grants arrive on.
//   - look: a waiter's re-run of the acquire script, which finds its grant,
//     keeps its liveness key, or grants a free lock.
//   - lease: how long Redis keeps a hold (PEXPIRE) from a confirmed acquire
//     or renewal.
//   - validity: the client's own bound on the lease: send time + lease −
//     drift margin.
//   - token: the fencing token of a hold.
//   - hold ID: what tells a hold in Redis from every other of its resource,
//     which every script acting on it checks: a lock's token; a
//     shared resource's hold has one of its own, since reads share a
//     token. A ForceUnlock ends exactly the holds whose IDs its script
//     returns.
//   - turn: the local order of re-entries through one handle's Context.
package rlock

// Where the RW lock and the semaphore plug in (for maintainers; not package
// documentation).
//
// The read-write lock and the semaphore are shared resources (readers,
// permits), and reuse, as they are: the attempt and its
// waiter loop (acquire.go, wait.go: subscribe on the grant line, queue
// with one acquire, wait for the grant message or look again, adopt the
// grant into a hold), the grant line (grantline.go), the hold with its
// validity, renewal registration, handles, turns and end (hold.go and the
// files it names), the holds table (table.go), and the handle core
// (handle.go, context.go: Context with its validity-checking Err, token,
// owner, unlock; a Permit's handle is told from a Lock's by its mode).
//
// Each plugs in at one seam, the unexported resource interface
// (resource.go), implemented by plainLock over reentrant.Keys and by
// sharedMode (shared_resource.go) over reentrant.SharedMode for every mode
// of a shared resource: the RW lock's read and write modes, and the
// semaphore's permits (one sharedMode per count asked for, all with one
// identity); both run their scripts through batonScripts, written once
// over what reentrant.Keys and reentrant.SharedMode both offer. It names the
// mode's scripts (acquire, as a waiter too;
// release; leave; renew; and its holdRef for the watchdog's batch, which
// renews holds of every kind of one slot in one script call) and its identity: its Redis
// key and mode (resourceID). The holds table and the handles a ctx carries
// are keyed by that identity, so c.Lock(r.Context(), "orders") never
// re-enters an RW read handle of "orders", and rw.Lock can find a read
// handle of its own RW lock in its ctx.
//
// RWLock (rwlock.go) adds its two modes; ErrUpgrade, for rw.Lock whose
// ctx's innermost handle of the same RW lock is a read (found by key, as
// handleIn finds a handle: the innermost decides, those further out are
// not looked at; see owner.go); a read granted at once inside a
// write hold, and kept after the write's Unlock with its Context
// (downgrade); DoRead and Do
// as Client.Do. Semaphore (semaphore.go) adds its mode, whose acquire
// carries the permit count, and which always runs under an owner of its
// own (permits are counted, not re-entered: a Permit's Context in ctx is
// no owner, WithOwner is refused); Permit, a handle as Lock is (it wraps
// the handle core: Context, Token, Release as the handle's unlock, no
// second copy), whose Count is its mode's weight; SetSize, Inspect and
// ForceRelease, the last shared with RWLock.ForceUnlock
// (forceReleaseShared). The Redis side they need (keys under the lock's
// hash tag, the size key, request replay, the grant and record formats,
// the server-clock leases) is package reentrant's.
