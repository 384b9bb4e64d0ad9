// Package watchdog keeps leases alive: it renews every watched lease before
// it expires and reports, through one callback per lease, the moment a lease
// is lost.
//
// It owns two things: the renewal schedule and the loss signal. One
// Scheduler serves a whole lock client with one goroutine, however many
// leases it watches. Every tick (Lease/3) it renews the due leases through
// the RenewFunc it was given, in batches of at most BatchSize items, so a
// caller that sends a batch as one pipeline pays one round trip per batch.
//
// It knows nothing about Redis or locks. An item is whatever the RenewFunc
// needs to renew one lease; an answer is nil (renewed), an error wrapping
// ErrNotHeld (the lease is gone) or any other error (try again next tick).
//
// Invariants:
//   - Validity is measured on the local monotonic clock. A lease's deadline
//     is the time its last successful renewal (or the command that took it)
//     was sent, plus Lease, minus Margin (the clock-drift allowance). Taking
//     the send time, not the reply's, matters: the store may apply the
//     command at any moment in between. The lease is lost at that deadline, not before
//     and not a tick later, even while a renew call hangs: deadlines are
//     enforced by a timer of their own, and every renew call is cancelled
//     at most one tick after its round starts.
//   - A transient error never stops renewal: the lease is retried every
//     tick until it is renewed or its deadline passes.
//   - After Lease.Stop returns true, the lease is in no batch formed later
//     and its onLost is never called, whatever an in-flight call answers.
//   - After Scheduler.Close returns, no goroutine of the scheduler runs and
//     no onLost is called.
//   - Goroutines do not grow with leases: one scheduler goroutine, plus one
//     goroutine for the renewal round in flight, if any.
//
// Scheduling rule: at each tick t, a lease is due when its last renewal was
// sent at or before t - tick/2. A lease renewed in the previous tick is
// therefore renewed again, and one watched within the last half tick waits
// for the next. A lease due already when watched (the command that took it
// was sent half a tick or more before: a slow acquire) is renewed at once,
// or as soon as the round in flight ends. So, counted from the send of the
// command that took the lease, renewals are at most 1.5 ticks apart while
// the renew calls succeed (unless that command alone took longer), and the
// TTL left at a renewal stays at about Lease/2 or more. A renewal whose reply
// is lost is sent again by the next round, at most a tick later, with at
// least half a tick less Margin left to be confirmed in.
// RenewNow starts a round over every live lease, due or not, the same way:
// for a store that may have lost leases, so a loss is found at once.
// Due leases are sent earliest deadline first, so leases that a slow round
// did not reach go first in the next one.
package watchdog
