// Package notify is a process-wide Redis pub/sub hub: many goroutines wait on
// named channels, and a message published on a channel is delivered to the
// subscription it names.
//
// A Hub owns the pub/sub connections of one Redis client: one connection in
// Classic mode (SUBSCRIBE/PUBLISH), one per master node in Sharded mode on a
// cluster (SSUBSCRIBE/SPUBLISH). Connections are opened on the first Subscribe,
// health-checked with PING while idle, replaced when they fail, and closed only
// by Hub.Close. The hub owns reference counting per channel, the
// mailboxes of its subscriptions, reconnection and, on a cluster, routing a shard
// channel to the master that serves its slot, again whenever the slot moves.
//
// It knows nothing about locks: no lock names, no scripts, no payload
// meaning. A message is addressed: the text before its first space is the ID
// of the subscription it is for, the rest its payload. An address may list
// several IDs of one channel, separated by commas ("id1,id2 payload"): each
// of those subscriptions gets the whole payload, so one message serves
// several waiters of one client. A message no subscription claims (an
// unknown ID, or one left untaken when its subscription closes) goes to
// Options.Unclaimed, so that whatever it offered can be handed back; for an
// address of several IDs, each unclaimed ID goes there on its own, as
// "<id> <payload>". An ID therefore has no space and no comma.
//
// Invariants it guards:
//   - Subscribe returns only after Redis has confirmed the subscription, so a
//     caller that retries its operation after Subscribe returns cannot miss a
//     message published after that retry.
//   - A delivery is never lost: a message addressed to a subscription is
//     kept in its mailbox until a Wait takes it, in order, or handed to
//     Unclaimed when the subscription closes first.
//   - Messages published while a connection was down are lost, so once the
//     subscription is confirmed again every subscription on the channel gets
//     a resync, telling it to check at the source.
//   - When a cluster slot moves, the old master drops its shard channels
//     (an unsolicited SUNSUBSCRIBE) and answers MOVED to commands on them.
//     Only the channels of that slot move: each is subscribed again on the
//     new master, and then resynced as after a reconnect. The connection and
//     its other channels are left alone.
//   - The commands on the wire are in the order of the reference-count
//     transitions that caused them; the first reference subscribes and the
//     last one unsubscribes, in the background, so that closing a
//     subscription never waits for the network; a reference taken before
//     that UNSUBSCRIBE is sent cancels it.
//   - No goroutine and no connection outlives Hub.Close.
package notify
