// Package bench measures baton against the polling locks that published
// Redis recipes use, on the same server, clients and measurements, so that
// only the lock differs.
//
// The baselines take a lock with SET key token NX and a lease, and when it
// is held sleep and try again: poll-10ms and poll-1ms sleep a fixed
// interval; poll-backoff sleeps a uniform random time below
// min(BackoffCap, BackoffBase·2^attempt) (capped exponential backoff with
// full jitter, base 1ms, cap 50ms). All release with a compare-and-delete
// script. Baton is rlock with its defaults: one Client per worker, woken by
// pub/sub, kept alive by its watchdog.
//
// A Suite runs every Algorithm on every Scenario. In a run, each worker has
// its own Redis client and Locker, as a separate process would, and loops:
// Lock a name, hold, Unlock, think. Each run measures:
//   - acquisitions per second;
//   - wait from calling Lock to holding; a Lock the end of the run cuts short
//     counts with its wait so far, so a starved worker is not left out;
//   - the hand-off gap, from the start of a release to the next acquisition
//     of that name by another worker that was already waiting when the
//     release started, and the same in PING round trips, measured by a
//     separate client during the run;
//   - commands per acquisition, twice: as written by the lock clients
//     (counted on their connections, pub/sub included), and as executed by
//     the server (INFO commandstats, which also counts commands run inside
//     scripts; not available on miniredis);
//   - fairness, the ratio of the least to the most acquisitions of a worker;
//   - mutual-exclusion violations: a worker acquiring a name another worker
//     has not yet started to release. There must be none.
//
// Runs never share keys: each has its own key prefix. Targets judges baton
// against the best baseline of the same run; WriteTable, WriteTargets and
// WriteFiles (JSON, CSV, SVG chart) present the results. The command
// bench/cmd/baton-bench drives it all.
package bench
