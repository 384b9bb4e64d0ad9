// Package rlock is baton's public API: a reentrant distributed lock on Redis
// whose waiters are woken by pub/sub instead of sleep-polling, kept alive by a
// watchdog, and fenced by monotonically rising tokens.
//
//	c, err := rlock.New(rdb)             // one Client per process
//	l, err := c.Lock(ctx, "orders")      // blocks until held or ctx ends
//	defer l.Unlock(context.Background())
//	work(l.Context())                    // cancelled if the lock is lost
//
// Ownership travels in a context. Each Lock call without an owner in its ctx
// gets a fresh owner of its own, so two goroutines never share a lock by
// accident. Lock calls made with a held lock's Context() re-enter it: the
// hold count rises, and the lock is free when every hold has been unlocked.
// WithOwner makes ownership explicit and shareable.
//
// A waiter that finds the lock held learns the holder's remaining lease,
// subscribes to the lock's channel (one shared pub/sub connection per
// Client), retries once the subscription is confirmed, and then blocks until
// a release message, the lease running out, or its own deadline. One release
// wakes one waiter per Client.
//
// Locks taken without WithLease use the watchdog lease (30s by default),
// renewed every third of it in batched pipelines. When renewal fails for
// longer than the lease, or Redis says the lock is gone, the hold's
// Context() is cancelled with a cause matching ErrLockLost and Unlock returns
// ErrLockLost. Redis is a single primary here, not Redlock: a failover can
// lose a lock, so pass Token() to the storage you protect and have it reject
// stale tokens.
package rlock
