// Package reentrant is the Redis side of baton's reentrant lock: the Lua
// scripts, the key and channel names, and the typed results of acquire,
// release, renew, force-release and inspect.
//
// A lock named N is a hash at <prefix>{N} whose fields are owner IDs and
// whose values are hold counts; the hash carries the lease as its PEXPIRE.
// Every key and channel derived from N carries the same {N} hash tag, so one
// lock lives in one cluster slot and every script is single-slot:
//
//	<prefix>{N}            the lock hash
//	<prefix>{N}:released   the channel a release publishes on
//	<prefix>{N}:fence      the fencing-token counter (never expires)
//	<prefix>{N}:req:<id>   a request's remembered result (expires)
//
// Invariants the scripts guard:
//   - only the owner that holds a lock can re-enter, renew or release it;
//   - the fencing token rises on every 0→1 acquisition and is kept on re-entry;
//   - a request ID runs at most once: a retried acquire or release (go-redis
//     retries on timeouts) replays the first result instead of counting
//     again; an owner made for one call (AcquireNew) needs no request key,
//     because a hold it already has can only be that call's own;
//   - a release that frees the lock publishes before its first write, so a
//     missing channel permission fails the script with the lock intact.
//
// The package has no goroutines and no timers; waiting, renewal and ownership
// live in the packages above it.
package reentrant
