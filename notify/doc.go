// Package notify is a process-wide Redis pub/sub hub: many goroutines wait on
// named channels, and a message published on a channel wakes one of them.
//
// A Hub owns the pub/sub connections of one Redis client: one connection in
// Classic mode (SUBSCRIBE/PUBLISH), one per master node in Sharded mode on a
// cluster (SSUBSCRIBE/SPUBLISH). Connections are opened on the first Subscribe,
// health-checked with PING while idle, replaced when they fail, and closed only
// by Hub.Close. The hub owns reference counting per channel, the wake-up
// permits of its waiters, reconnection and, on a cluster, routing a shard
// channel to the master that serves its slot, again whenever the slot moves.
//
// It knows nothing about locks: no lock names, no scripts, no payload
// meaning. A message is a wake-up and nothing more; what the woken goroutine
// retries is its caller's business.
//
// Invariants it guards:
//   - Subscribe returns only after Redis has confirmed the subscription, so a
//     caller that retries its operation after Subscribe returns cannot miss a
//     message published after that retry.
//   - A wake-up is never lost: a message wakes one waiter, and when the
//     waiter picked has just given up, or none is waiting, the wake-up passes
//     on or is kept as a permit for the next Wait (at most one per reference).
//   - Messages published while a connection was down are lost, so once the
//     subscription is confirmed again every waiter on the channel is woken,
//     and every reference not waiting gets a permit.
//   - When a cluster slot moves, the old master drops its shard channels
//     (an unsolicited SUNSUBSCRIBE) and answers MOVED to commands on them.
//     Only the channels of that slot move: each is subscribed again on the
//     new master, and then woken as after a reconnect. The connection and
//     its other channels are left alone.
//   - The commands on the wire are in the order of the reference-count
//     transitions that caused them; the first reference subscribes and the
//     last one unsubscribes.
//   - No goroutine and no connection outlives Hub.Close.
package notify
