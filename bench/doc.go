// Package bench measures baton against the Go Redis lock libraries people
// would otherwise use and against the polling recipes Redis's documentation
// publishes, on the same server, clients and measurements, so that only the
// lock differs.
//
// # Algorithms
//
// Each is a Locker; every worker has its own Redis client and Locker, as a
// separate process would.
//   - baton: rlock with its defaults (one Client per worker, woken by
//     pub/sub, kept alive by its watchdog).
//   - redsync (github.com/go-redsync/redsync/v4) on one pool, the worker's
//     client, so a quorum of one: its defaults (8 s expiry, a random
//     50–250 ms between tries), and redsync-1ms with a 1 ms retry delay.
//     Both may try without limit (WithTries(math.MaxInt32)); by default
//     redsync gives up after 32 tries, about five seconds.
//   - redislock-1ms and redislock-10ms (github.com/bsm/redislock): Obtain
//     with a linear backoff of 1 ms or 10 ms and a TTL of PollLease. Obtain
//     waits until its context's deadline, or for the TTL when the context
//     has none; the bench's contexts always have the run's deadline.
//   - rueidislock (github.com/redis/rueidis/rueidislock): one key per lock
//     (KeyMajority 1) and its other defaults (5 s validity, extended in the
//     background; waiters woken by client-side-caching invalidations, or
//     on a server without them, miniredis, retrying every 20 ms). It
//     brings its own rueidis client per worker, dialled to the same server
//     as the worker's go-redis client and counted the same way. It waits
//     until its context ends.
//   - baton-redisson-wire: rlock in Redisson's RLock format
//     (rlock.WithRedissonWire with a random client ID), as a Java service
//     would see it: no queue in Redis, waiters woken by Redisson's unlock
//     message and trying again. baton's own format's server cost is judged
//     against it (Targets).
//   - poll-10ms, poll-1ms and poll-backoff: SET key token NX with a lease
//     (PollLease), retried after a sleep until it succeeds, released by a
//     compare-and-delete script. poll-10ms and poll-1ms sleep a fixed
//     interval; poll-backoff sleeps a uniform random time below
//     min(BackoffCap, BackoffBase·2^attempt) (capped exponential backoff
//     with full jitter, base 1 ms, cap 50 ms).
//
// The read-write and semaphore scenarios (RWScenarios, SemaphoreScenarios)
// have contestants of their own (RWAlgorithms, SemaphoreAlgorithms), and a
// Suite runs each scenario only with the algorithms of its Kind:
//   - baton-rw: rlock's RWLock, RLock for reads, Lock for writes.
//   - redisson-rw: a reader-preferring RW lock in Redisson's RReadWriteLock
//     format (a hash with field mode, read or write, and a re-entry count
//     per holder; a timeout key per read hold), written for the bench from
//     that format (lua/redisson_rw_*.lua): a read is granted whenever the
//     mode is read, writers waiting or not. Waiters try again on the unlock
//     message or when the lock's TTL runs out.
//   - baton-plain: baton's plain lock, taken for reads and writes alike.
//   - redisson-semaphore: a counter semaphore in Redisson's RSemaphore
//     format (a string of the permits available, taken by a DECRBY when
//     enough are left, given back by INCRBY and a message), written for the
//     bench (lua/redisson_semaphore_*.lua). Waiters try again on every
//     message.
//
// The multi-lock scenario (MultiScenarios: sets of 2 to 6 of 16 names, in
// the order each worker's seeded generator draws them, the same for every
// contestant) has contestants of its own (MultiAlgorithms):
//   - baton-multi: rlock's LockAll and LockSet.Unlock, with the default
//     watchdog lease.
//   - redisson-multilock: Redisson's MultiLock algorithm, written for the
//     bench from RedissonMultiLock over locks in Redisson's RLock format
//     (lua/redisson_lock.lua, lua/redisson_unlock.lua): lock() tries in
//     rounds of 1,500 ms per lock; a round takes the locks one by one in
//     the caller's order, waiting for each (woken by its unlock message or
//     TTL) while holding the ones before it; a lock not had in time gives
//     back all and starts over. With sets in random orders it deadlocks
//     until a round's time runs out.
//   - obtainmulti-1ms: bsm/redislock's ObtainMulti, written for the bench
//     from its rule (lua/obtain_multi.lua, lua/release_multi.lua), since
//     the released redislock (v0.9.4) has none: one script takes every
//     key of the set (MSETNX) or none, tried again 1 ms after each
//     failure. Its keys share one slot (a hash tag).
//
// The Redisson-style waiters stay subscribed once they have waited (Redisson
// subscribes and unsubscribes around each wait), and nothing renews their
// holds, whose 30 s lease outlives every run: both in the baselines' favour.
//
// # Measurements
//
// A Suite runs every Algorithm on every Scenario, in rounds: each round runs
// the algorithms in an order rotated by one, so none always goes first. In
// a run, each worker loops: Lock a name, hold, Unlock, think. Each run
// measures:
//   - acquisitions per second (reported as the median over the rounds, with
//     the slowest and fastest round);
//   - wait from calling Lock to holding; a Lock the end of the run cuts short
//     counts with its wait so far, so a starved worker is not left out;
//   - the hand-off gap, from the start of a release to the next acquisition
//     of that name by another worker that was already waiting when the
//     release started, and the same in PING round trips, measured by a
//     separate client during the run, or, in the idle hand-off, by each
//     holder on its own client just before it releases;
//   - commands per acquisition, twice: as written by the lock clients
//     (counted on their connections, pub/sub included), and as executed by
//     the server (INFO commandstats, which also counts commands run inside
//     scripts), with the server time they took (commandstats usec); n/a on
//     miniredis, which has no commandstats;
//   - the bench process's user+system CPU time per acquisition (n/a on
//     miniredis, which runs inside the process);
//   - fairness, the ratio of the least to the most acquisitions of a worker;
//   - mutual-exclusion violations: a worker acquiring a name another worker
//     has not yet started to release. There must be none. In the RW and
//     semaphore scenarios, a read weighs 1 and a write all the workers, a
//     request its permits: a violation is an acquisition that takes the
//     weight held above the name's capacity (a write with anyone; more
//     permits than the semaphore has);
//   - in the RW scenarios, reads per second, and the wait p99 of reads and
//     of writes apart, and the longest wait of a write; in
//     rw-write-admits-10 (one writer, 10 readers, so that each write's
//     release finds the 10 reads queued), the time from the start of the
//     write's release to the last of those reads holding, p50, and in
//     PING round trips;
//   - in the semaphore scenario, on a target with a URL, the permits leaked
//     by a holder SIGKILLed while holding 2: a process of the program
//     itself (ServeHolder) takes them with a 2 s lease where permits have
//     one and is killed; once the lease has passed, the permits another
//     process cannot get are counted;
//   - in the semaphore scenarios, the wake-ups per grant: waiting calls
//     woken by a message per grant to a waiting call (WakeCounts); the
//     semaphore's idle hand-off (sem-idle-handoff, three workers asking 1
//     of 2 permits) times the gap from a release to the grant it makes, as
//     the lock's idle hand-off does.
//   - in the replicated scenarios (ReplicaScenarios: acks-uncontended,
//     acks-hot-key, acks-idle-handoff, the lock's scenarios of those
//     names on Target.Replicated, a master with one replica), baton with
//     replica acknowledgements on (1 within rlock.DefaultReplicaAckTimeout,
//     the default's where the master has a replica) and off, rotated in
//     each round like every other pair of contestants; before each run,
//     the round trip of a SET and a WAIT for the replica in one pipeline
//     (AckP50) and what it adds to a PING (LagP50, the replica's lag), the
//     medians of 21 each, alternately on the idle master.
//
// After the rounds, each algorithm's calls are measured one at a time on a
// free name, with INFO commandstats read around each: the server time of
// an acquire and of a release apart, per script run (EVALSHA µs) and per
// call (ScriptCost, in the JSON's script_costs), for baton's scripts and
// Redisson's alike; none on miniredis.
//
// # Round trips
//
// On loopback a round trip costs less than the scripts and Go's
// scheduling, so latency there measures those, not the round trips a lock
// saves. A Target with an RTT reaches the server through a DelayProxy, in
// the bench process, that holds every byte back RTT each way (every
// client: the workers', their pub/sub connections and the pinger's). Its
// waits are nanosleep system calls: time.Sleep rounds a wait below a
// millisecond up to one. At 500 µs a PING takes about 1.1–1.3 ms. Its CPU
// (about 0.2 ms per round trip on a loaded 2-core machine) is the
// process's, so CPU figures are n/a with a delay, and the scenarios with
// thousands of round trips a second (storm, many-keys) measure the proxy
// more than the locks: a run with a delay runs the scenarios RTTTargets
// judges by default.
//
// # Quorum mode
//
// The quorum scenarios (QuorumScenarios, KindQuorum: the uncontended
// Lock+Unlock, the hot key and the storm, each on 3 and on 5 nodes, named
// with -q3 and -q5) take one lock across Scenario.Nodes independent
// servers of a Target's Nodes. Each worker opens a client of its own on
// every node, counted like its first. Their contestants (QuorumAlgorithms)
// are baton's quorum mode (rlock.NewQuorum, its defaults) and redsync
// (Redlock) on one pool per node, with its defaults and with a 1 ms retry
// delay. Their pinger PINGs every node at once and times the last answer:
// one round to every node, what a Lock of one round costs (redsync's, a
// SET NX on every node). The token's second round is what baton's
// uncontended Lock p50 costs above that (QuorumRoundTwo); redsync's own
// difference shows how near the yardstick comes to a Lock of one round.
// Their server figures sum the nodes; their server time per call is the
// first node's share of a quorum of 3. QuorumTargets judges baton against
// redsync on the hot key and in the storm of each size: wait p99 ≤ 1/3 of
// the best redsync's, acq/s ≥ the fastest's, fairness ≥ 0.8. A run with
// a delay puts a DelayProxy before each node, and runs the uncontended
// and hot-key quorum scenarios by default (QuorumRTTScenarios).
//
// # Targets
//
// Runs never share keys: each has its own key prefix. Targets judges baton's
// throughput, fairness and cost on figures of the same run: against the
// FIFO limit 1/(hold + PING p50), the best peer or polling recipe, or
// bsm/redislock; in the multi-lock scenario, baton-multi's wait p99
// against the best baseline's, its fairness, and its longest wait against
// its median; RTTTargets judges its latency, only on a run with a delay
// (set at RTTJudged, 500 µs each way). Neither is judged on miniredis.
// WriteTable, WriteJudged and WriteFiles (JSON, CSV, SVG chart) present a
// Report, which carries what the run ran on (Meta). The command
// bench/cmd/baton-bench drives it all, on a throwaway redis-server by
// default.
//
// # Why bench is in the root module
//
// The peers are dependencies of this package only. Go compiles only the
// packages a program imports, so a program that imports rlock never
// compiles redsync, redislock or rueidis; they appear in baton's go.mod,
// and so in its users' module graphs, but not in their builds. A separate
// module would keep them out of go.mod too, but then
// `go run ./bench/cmd/baton-bench` would not work from the repository root
// without a go.work file there, which the project does not allow, and the
// bench would measure a released baton instead of the working tree's
// unless kept in step by a replace directive.
package bench
