// Package reentrant is the Redis side of baton's reentrant lock: the Lua
// scripts, the key and channel names, and the typed results of acquire,
// release, renew, leave, force-release and inspect.
//
// A lock named N is a hash at <prefix>{N} whose fields are owner IDs and
// whose values are hold counts; the hash carries the lease as its PEXPIRE.
// Every key and shard channel derived from N carries the same {N} hash tag,
// so one lock lives in one cluster slot and every script is single-slot:
//
//	<prefix>{N}                the lock hash
//	<prefix>{N}:fence          the fencing-token counter (never expires)
//	<prefix>{N}:queue          the waiters, oldest first, one record each
//	<prefix>{N}:granted        a shared owner's last grant, for a waiter that missed it
//	<prefix>{N}:alive:<client> a client's liveness key, where the receiver count cannot judge
//	<prefix>{N}:req:<id>       a request's remembered result (expires)
//	<prefix>grant:<client>     a client's grant channel (<prefix>{N}:grant:<client> sharded)
//
// Invariants the scripts guard:
//   - only the owner that holds a lock can re-enter, renew or release it, and
//     only under its hold's token;
//   - the fencing token rises on every new hold, taken or granted, and is kept
//     on re-entry; it follows the server clock, so it also rises across a lost
//     counter;
//   - nobody takes a free lock past a non-empty queue: the release that frees
//     it, or the first script to find it free, grants it to the oldest live
//     waiter in the same script and publishes one message to that waiter.
//     A script skips a bounded number of dead entries; past more, it takes
//     nothing, says so, and the same call runs the grant again, until the
//     lock is granted or the queue is empty (the call's own runs are
//     bounded too; the next call goes on).
//     A waiter no receiver counted is skipped; where the count cannot judge
//     (Namespace.ReceiversElsewhere) a waiter without a liveness key is
//     skipped before anything is published, and every grant published is
//     kept;
//   - a request ID runs at most once: a retried call (go-redis resends on
//     timeouts) replays the first result instead of counting, queueing or
//     granting again; an owner made for one call (AcquireNew) needs no
//     request key, because a hold it already has can only be that call's own;
//   - a grant publishes before its first write, so a missing channel
//     permission fails the script with the lock and the queue as they were;
//     and after a write that changes nothing, so a node that refuses writes
//     (a replica, such as a demoted master) fails it before anything is
//     published.
//
// The package has no goroutines and no timers; waiting, renewal and ownership
// live in the packages above it.
package reentrant
