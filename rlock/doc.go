// Package rlock is baton's public API: a reentrant distributed lock on Redis
// whose waiters are woken by pub/sub instead of sleep-polling, kept alive by a
// watchdog, and fenced by monotonically rising tokens.
//
//	c, err := rlock.New(rdb)                 // one Client per process
//	err = c.Do(ctx, "orders", func(ctx context.Context) error {
//		return work(ctx) // ctx ends if the lock is lost
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
// A hold is valid until the send of its last confirmed acquire or renewal,
// plus the lease, less a drift margin (lease/100 + 2ms). Its Contexts end no
// later than that, with a cause matching ErrLockLost, and Context().Err()
// checks the clock itself, so a holder resuming from a pause sees the loss on
// its first look. Locks taken without WithLease use the watchdog lease (30s
// by default), renewed every third of it in batched pipelines.
//
// Redis is a single primary here, not Redlock: a failover can lose a lock, so
// pass Token() to the storage you protect and have it reject stale tokens.
// It does not own the Redis client, the key layout and scripts (package
// reentrant), the pub/sub connections (package notify) or the renewal
// schedule (package watchdog); those are building blocks that may change
// before v1, and rlock is the API.
package rlock
