// Package reentrant is the Redis side of baton's reentrant lock, and of
// its shared resources (the read-write lock and the semaphore): the
// Lua scripts, the key and channel names, and the typed results of
// acquire, release, renew, leave, force-release and inspect. It has no
// goroutines and no timers; waiting, renewal and ownership live in the
// packages above it. This comment is the protocol the scripts and their
// clients keep; rlock's documentation tells the client's side.
//
// # Keys
//
// A lock named N is a hash whose fields are owners and whose values are
// their hold counts; the hash carries the lease as its PEXPIRE. Every key
// and shard channel derived from N carries the same {N} hash tag, so one
// lock lives in one cluster slot and every script is single-slot (so are
// RenewAll's calls, which renew several locks' holds each: their caller
// groups the holds by slot):
//
//	<prefix>{N}                the lock hash
//	<prefix>{N}:fence          the fencing-token counter (expires; see Footprint)
//	<prefix>{N}:queue          the waiters, oldest first, one record each (expires)
//	<prefix>{N}:granted        the last grant, until its waiter claims it or gives it back
//	<prefix>{N}:wake           wake records of waiters that look without queueing (quorum mode; expires)
//	<prefix>{N}:alive:<client> a client's liveness key, where the receiver count cannot judge
//	<prefix>{N}:req:<id>       a request's remembered result (expires)
//	<prefix>grant:<client>     a client's grant channel (<prefix>{N}:grant:<client> sharded)
//
// # Holds and tokens
//
// Only the owner that holds a lock can re-enter, renew or release it, and
// only under its hold's token: a release, a renewal or a re-entry meant
// for a hold that has ended cannot touch the same owner's next hold. The
// lock is exclusive, so the counter's value is the token of the hold.
//
// The token rises on every new hold, taken or granted, and is kept on
// re-entry. It is the larger of the counter's next value and the server
// clock in microseconds, so it rises across a lost counter too (a restart
// without data, a failover that lost the last increments, an expired
// counter): a token is at least the clock at its issue, and a token issued
// after the counter is gone is at least the clock then. The counter keeps
// tokens rising where the clock alone would not (within one microsecond,
// after a step backwards); tokens issued faster than the clock advances
// put it ahead of the clock, for as long as the clock takes to catch up.
//
// Tokens end at MaxToken, 2^53-1 (2^53 µs is in the year 2255): the
// scripts hold them in Lua numbers, doubles, exact only that far. Past it
// a counter's next value rounds to the counter itself (tokens stop
// rising), and near 2^63 it prints as -2^63 while the reply reads 2^63,
// so the hold cannot be named by its token. So a script that would make a
// token (or a shared resource's hold ID) past MaxToken fails instead,
// with an error reply whose code is TOKENRANGE (ErrTokenOverflow), before
// it writes anything that names the token: an acquire takes nothing, and
// a release, leave or force-release that would hand the lock on fails,
// its hold left to its lease. Only a counter set far ahead gets there;
// the lock is then refused on that server until the counter is deleted by
// hand, which gives up the order of the next tokens against the ones
// already handed out.
//
// # Footprint
//
// No key baton writes lives forever, but one: a fencing counter at the
// end of the token range (MaxToken or above, a time after the year 2255)
// that refused a new hold is put back as it was with no expiry, which it
// would have outlived anyway (see Holds and tokens). Each other key
// expires when nothing depends on it any more: a lock's hash and a
// resource's holds with their leases, a queue a waiter's lease after the
// last look of any of its waiters (a waiter looks at least every third of
// its lease), wake records each its waiter's liveness TTL after the look
// that left it (see Quorum mode), the key with the last, request keys after RequestTTL, liveness keys after
// AliveTTL, a semaphore's size two leases after the last hold or waiter
// that depends on it, or after SetSize (see Shared resources).
//
// The fencing counter holding token t of a hold of lease L expires at t's
// time plus 2L (in server ms, PXAT; fenceUntil in lua/token.lua). Every
// script that extends a plain lock's hold (a re-entry, a confirmation, a
// renewal) raises it to 2L from then and never lowers it, so the counter
// outlives the hold, whose token it names. Tokens stay monotonic once it
// is gone: it is deleted only once the server clock has passed t's time
// plus 2L, and the next token is at least the clock, so above t. This
// holds however far the counter ran ahead of the clock, since the expiry
// is t's own time, not the time of its write. It rests on one assumption
// about the clock of the server holding the data (a master's, or, after a
// failover, its replica's): it never steps backwards by more than 2L, less
// the time since the counter expired; a larger step after the counter is
// gone lets the next token fall below t. The clock floor across a restart
// without data, or a failover that lost the last writes, rests on the same
// clock, as before: the server's clock must have passed the lost tokens.
//
// A lease is applied in whole milliseconds, rounded up. Re-entry and
// renewal never shorten it: the holds of one owner were promised at least
// what the longest of them asked for.
//
// # Quorum mode
//
// One lock may span N independent masters (rlock.NewQuorum, N ≥ 3), each
// running the plain lock's scripts above unchanged, under one owner: a
// hold is made on a majority M = ⌊N/2⌋+1 of them, in two rounds.
//
// Round 1. Each node runs its acquire (or, for a waiter, its look), all
// at once. A node that grants the lock gives it the token t_i of a new
// hold there, the larger of its counter's next value and its clock, read
// in the same script as the grant: so t_i is above every value that
// node's counter had when it granted. The quorum's token is
// T = max t_i over the nodes that granted.
//
// Which nodes those are is the caller's to bound: once a majority has
// granted, it goes on listening for the others as long again as that
// took, and T covers every node that granted by then. A grant that comes
// later still cannot join the hold: its t_i is above T (that node's clock
// ran on) and no counter is lowered, so it is given back. Lowering it to
// T is not safe: the grant may run after the hold ended and another
// counted hold, of a token above T, took the node and left it; the
// counter would then fall below that token. (Safe would be a set-back to
// a T above the counter's value before the grant, which the grant's
// reply does not carry.) A hold made on a bare majority would end with
// the loss of any one of its nodes while the rest of the quorum is up.
//
// A given owner (one that several calls share) may hold the lock already
// on some nodes: there the acquire re-enters that hold (its count rises
// above 1) and answers with the hold's ID, not a new t_i. That ID is the
// owner's other calls' name for the hold, so round 2 never raises it: a
// majority re-entering one hold makes the look a re-entry of it (its
// token, no round 2, every other grant given back); otherwise the
// re-entries are given back, and T and round 2 are over the new grants
// alone, of which a majority is needed as before. Nor does round 2 raise
// a new grant that another call of the owner re-entered before the raise
// came (its count above 1): that call names the hold by t_i, and gives
// its count back by it. The raise answers that the node holds the hold
// under t_i, not raised; the raising call counts the node as not
// committed and gives its own count back by t_i as well. So a hold's ID
// never moves under a call that named it, and every count goes back by
// the ID it was taken under (a raise moving it made the other call's
// give-back find nothing, and left its count behind). None of this
// changes the arguments below: a re-entry makes no new hold, a node not
// raised is not committed, and a new hold's T counts only through the M
// nodes that committed it.
//
// Two calls of one owner that look at once may both fail so: at most one
// has new grants on a majority (two majorities share a node, which grants
// one call new and lets the other re-enter), and the other re-enters
// some of them before their raise. The re-entries are never kept (a
// re-entry short of a majority of one hold is given back as its look
// ends), so a look that does not meet the other call's finds its counts
// gone, or a committed hold to re-enter. Nothing bounds how often the
// looks meet, but the wait path sets them apart: the other call sends no
// message when it commits or gives back, so a look that met it looks
// again after a random wait of one to two times the time its answering
// nodes took, doubled for each such look in a row. A TryLock that fails
// so returns ErrNotObtained.
//
// An owner made for one call holds at most one grant on a node, which
// every look of that call's finds there and the acquire reports
// (AcquireResult.Reported) without counting it again. Such a grant may
// be an earlier look's that is being given back (the release already
// named by its token), or one whose reply was lost and whose undo is
// under way, or a late reply's: if a later look counted it, that release
// would take the node out of the later look's hold, with the hold then
// short of a majority while its holder's Context is live. So a look
// counts a node only where it took a new grant or claimed the grant
// handed to its waiter (AcquireResult.Claimed); a grant merely reported
// is stale, given back (a second release by its token finds nothing),
// and not counted. The client also holds a look back on a node until its
// give-backs there have ended, so that it seldom meets one.
//
// Round 2. Each granted node runs lua/quorum_raise.lua (Keys.Raise): in
// one script, and only while the owner still holds the lock there under
// t_i, its counter becomes T. The counter's value is the hold's ID on a
// node (see Holds and tokens), so T is now the hold's ID on every node
// that committed: its renewals, re-entries and release there name it by
// T, with the scripts of one node. A node that did not commit is given
// back (Raise, which tells whether it still holds, and under which ID,
// then release by that ID). Every copy of one node's raise (a resend, the
// give-back's, a release's, one late on the network) goes under one
// request ID, and the first to run decides for all: a copy that ran
// after the release, where another call of the owner still holds a count
// under t_i, would move that count's ID, and its give-back by t_i would
// find nothing.
//
// A node whose counter is at the end of the token range (see Holds and
// tokens) refuses round 1 with an error: it counts as failed, and the
// others' majority may still grant. Round 2 never raises past MaxToken,
// as T is one of the grants' tokens.
//
// When it counts. T is the hold's token once M nodes have committed it,
// all their replies received before the validity: the first send of
// round 1, plus the lease, less the drift margin, as on one node. Short of
// that, every node that granted is given back. The hold stays valid while
// M nodes confirm its renewals, each by that same rule.
//
// A force release (rlock's quorum ForceUnlock) ends a hold on a node
// before its time; the argument below counts it as the hold's end there.
// It names the hold it ends (ForceReleaseWaking's hold, read from the node
// first), so a copy that runs late, after a later hold H' was granted
// there, deletes nothing: a copy that deleted H' there would leave H' on
// fewer than M nodes while its validity runs, and a third hold could take
// a majority.
//
// Why two holders never overlap. Two counted holds H and H' have M nodes
// each, so a node n in common. A node grants one owner at a time, so H'
// was granted n only once H's hold there had ended: released, or expired,
// which is past H's validity (its lease there ran from after the first
// send, and the drift margin covers the rates of the clocks).
//
// Why tokens rise from holder to holder. Take H before H' at n, as above.
// H committed T at n while it held n (the raise checks that), so before
// H' was granted n. The counter only rises while it lives (scripts set it
// to a larger value or keep it), so H' read a value at least T at n, and
// t'_n > T, so T' ≥ t'_n > T. The same holds at every node in common, so
// no two counted holds order differently at two nodes (each would be above
// the other). Nothing here compares the nodes' clocks: T' > T rests on
// the counters alone. Two things can take a counter away:
//   - Its expiry (see Footprint): a raise keeps the counter at least until
//     T's time plus 2L by the node's own clock (PEXPIREAT GT), so a
//     counter gone is one whose node's clock has passed T, and t'_n, at
//     least that clock, is above T. This rests on one node's clock not
//     stepping back by 2L, the assumption a single node makes; never on
//     clocks agreeing across nodes, which a quorum's tokens (the largest of
//     the nodes' clock readings) may run ahead of by any skew.
//   - The loss of a node's data (a restart without persistence). Then n
//     forgets T, and H' may be granted there at once, with t'_n from n's
//     clock alone, and, where H' needs no other node of H's, T' < T: the
//     token goes backwards, and if the restart falls inside H's validity,
//     H and H' overlap as well. So a quorum's counters must not be lost:
//     appendfsync always; or a node restarted without its data stays out
//     for a lease (then holds never overlap, as any hold n had has ended
//     elsewhere, and tokens still rise provided the nodes' clocks are
//     within that lease of each other, since n's clock then passed every
//     token of a hold that ended before it came back).
//
// Waiting. A waiter subscribes on every node's grant line, and a grant to
// it on any of them wakes it; it then looks once, on every node, whatever
// woke it. A split vote (each node granting a different head) must not
// deadlock, so a look that gets fewer than M grants keeps only those of a
// prefix of the nodes in their fixed order (nodes that failed in this look
// skipped), up to the first that answered without a grant, the node it
// waits on, and gives back the rest, which passes each to its node's next
// waiter, if any.
//
// Its looks queue it only on the nodes up to the one it waits on (before
// its first look, the first node). Past it they look as its waiter
// unqueued (Waiter.Unqueued): they take the lock only where it is free
// with nobody queued, and claim a grant it was handed there while queued;
// where the look does not end holding the node, it leaves a wake record
// there (the waiter's queue record, in <prefix>{N}:wake, scored by when it
// runs out: its liveness TTL, the liveness key's where there is one,
// else its lease, from the look; each look replaces it). Every look of a
// quorum waiter, queued or not, takes its record out first
// (Waiter.Wakes), so none stays on a node where its call ends holding, to
// which its leave does not go. A record is never granted from. A hold's
// release that leaves the node free (nobody queued to grant:
// Keys.ReleaseWaking) wakes one record's waiter, the
// oldest live one, and takes that record out: a message "<id> wake" on
// its grant channel, judged live as a grant is (see Liveness), which only
// makes it look again, on every node. So the node it waits on may pause
// after its look, when no release there can wake it: the releases of the
// other nodes do. A leave takes its record out; a leave of a waiter with
// neither a record nor a queue place while the node is free passes on a
// wake-up it may have taken and not used (one more at worst). A give-back
// of a grant a look could not keep, by a call still waiting, is a plain
// Release and wakes nobody: the waiters of the records there looked no
// later, and one woken would take the node and give it back in turn,
// waking the next, down the whole set of records. A call that has left
// gives back waking (ReleaseWaking), passing on the wake-up its grant may
// have come from; a quorum ForceUnlock wakes one too
// (ForceReleaseWaking). A pass (Draining) wakes none.
// Where it has no waiter on the node it waits on (not subscribed there
// yet), it queues on every node it has one. A look that left it unqueued
// on a node it must now be queued on to be woken (its prefix grew past
// the nodes the look queued on, or a subscription there joined after the
// look began) looks again at once, queued: each such look follows a grant
// or a join, so the waiter is queued where it waits before it sleeps. It
// needs no leave to stop queueing on a node (a leave would wait on that
// node, and a paused node would delay the call): its record left there is
// granted to it at most once, and that grant is claimed by its next look
// there (kept or given back with the prefix) or given back by its leave
// when the call ends, never taken unclaimed.
//
// Why no deadlock. Two waiters that see the same nodes fail both start
// their prefix at the same node, which only one of them can hold: so at
// most one waiter keeps grants (the keeper), and it is queued on the node
// it waits on; every other waiter keeps none and waits on that first
// node, queued there only (and in records it left elsewhere, each granted
// once and passed on). The keeper waits for the holder, and for those
// records ahead of it; the others wait for the keeper and the holder: no
// cycle, so no deadlock. (Waiters that see different nodes fail, or have
// no waiter on the node they wait on, may start at different nodes and
// queue on more; their next look, at the latest a third of a lease later,
// sees again.) The order is first-come at the first node that answers,
// not across nodes.
//
// A look waits for a node that failed the call's last look only until
// every other node answered, and counts it failed if it has not: a node
// paused costs a waiting call one wait for it (its read timeout), not one
// a look. That matters in a split with a node paused: two waiters woken
// together each take one free node; the one that keeps nothing gives its
// node back and may take it again in its next look, before the keeper's
// look that queues it there (a free node with nobody queued), which then
// gets it by that give-back's grant; each look that falls short of a
// majority waited for the paused node (5 s a look with go-redis's
// defaults), now only the first.
//
// What the rule bounds, and what it does not. A release on a node past
// the first goes to the keeper, to a record left there (once), or leaves
// the lock free and wakes one waiter; it is not passed down a queue of
// waiters that can keep none, each waking, looking on every node and
// giving it back. With every waiter queued on every node, a hold cost
// about 13 grants on 3 nodes and 66 on 5 in a storm of 32 waiters
// (TestQuorumStormCompletes, which asserts at most one message per node);
// with the queue up to the node waited on, about one; with wake records,
// about 2.4 on 3 nodes and 3.7 on 5, each release of a node nobody is
// queued on waking one waiter, mostly the next holder. What it does not
// bound: a newcomer's first look may take nodes past the first that are
// free with nobody queued, and gives them back at once; a waiter that
// looks meanwhile finds them held, queues there and is handed them by
// that give-back, at the cost of one more wake-up and look, not of a
// stall. Nor does it bound a wait while nodes fail or pause beyond the
// wake-ups above (a waiter woken whose call then ends passes its wake-up
// on only through its leave), and it claims no order across nodes beyond
// the first node's queue.
//
// Footprint of quorum mode: the same keys on each node as the plain lock,
// and the wake records, which expire (see Footprint); the counter's
// expiry is the raised token's.
//
// # The baton pass
//
// Waiters queue in Redis, and whatever frees the lock hands it on in the
// same script. A call that may wait first subscribes, under a waiter ID of
// its own, to its client's grant channel; once Redis has confirmed the
// subscription it queues, with the same acquire script that takes a free
// lock. A held lock gets the waiter's record (Waiter.record) at the back
// of its queue, once however often the call is repeated.
//
// The script that frees the lock (the release of the last hold, the leave
// of a waiter that had been granted it, a force-release) grants it to the
// oldest live waiter: the waiter's owner becomes the holder, with hold
// count 1, a new token and the lease the waiter asked for, and one grant
// message (ParseGrant) is published to the waiter's channel. The grant is
// the wake-up: the waiter's call returns on it, with no further round
// trip. Since the waiter subscribed before it queued, a grant published
// after it queued reaches it.
//
// Nobody takes a free lock past a non-empty queue: the script that frees
// it, or the first script to find it free (a lease ran out), grants it to
// the queue's head, which may be the caller.
//
// A given owner's calls (Acquire, not AcquireNew) queue one by one, each
// under its own waiter, and re-enter the owner's hold: a call of an owner
// that holds the lock re-enters it at once, queued or not. So a grant to a
// given owner's waiter wakes that owner's other waiters among the first 64
// entries of the queue ("<id> wake", as a wake record's wake-up, see
// Quorum mode), and each re-enters at its look; one further back re-enters
// at its next look. An acquire that grants the head, a waiter of the
// caller's own given owner, reports so, and Acquire runs it once more,
// which re-enters.
//
// # Looks
//
// A waiter runs its acquire again (a look) where it may have missed its
// grant: after its subscription was lost and restored, when the holder's
// lease should have run out (the first look grants the head), and at
// least every third of its lease. A look finds the grant the waiter was
// handed, message or not: an owner made for one call holds the lock only
// through its grant, and every grant is kept in the granted key until its
// waiter claims it. Each look that finds the waiter still queued is a moment known to
// precede its grant, so a grant leaves at least two thirds of the lease to
// rely on.
//
// A waiter that gives up leaves (Keys.Leave): its record goes, or, if it
// was granted the lock meanwhile and has not claimed the grant, the same
// script gives back the one count the grant gave, passing the lock on if
// that was the last. A grant that reaches a client whose waiter has gone
// is given back by that client with the same leave, unless the hold is
// already in use there (a look found it first). A grant's count thus goes
// back once, by the leave while the granted key names the waiter, or by a
// release of the handle its look claimed; never another call's count of a
// given owner, who may have re-entered the hold meanwhile.
//
// # Liveness
//
// A grant goes only to a live waiter. PUBLISH and SPUBLISH return how
// many clients received the message, and on a single node, and on a
// shard's master, that count is exact: a waiter nobody received is dropped
// from the queue and the next is tried.
//
// Where a waiter's subscription may be on another node than the one that
// runs the grant (Namespace.ReceiversElsewhere: PUBLISH on a cluster, a
// Sentinel client on a demoted master) the count misses receivers the
// message still reaches, so a message sent cannot be taken back. There
// each look keeps its client's liveness key for AliveTTL; a grant drops,
// unpublished, a waiter without one, and keeps every grant it publishes.
// Such a grant's lease lasts only the liveness TTL until its waiter
// confirms it (a renewal, or a look): a waiter that crashed while its key
// still lived holds the lock that long, not its whole lease.
//
// # Draining
//
// One script drops a bounded number of dead entries (grantTries in
// lua/grant.lua), which bounds how long it blocks the server. A script
// that runs out with entries left takes nothing and says so: the lock is
// then free with a queue behind it, which nobody may take past. The call
// that freed it runs lua/pass.lua until the lock is granted or the queue
// is empty (Keys.handOn); an acquire that found it so reports Draining and
// runs again. Each call's runs are bounded too (drainPasses); the next
// call, or a waiter's look, goes on where it stopped.
//
// # Replay
//
// go-redis resends a command on a read timeout, so one call may run twice.
// A request ID runs at most once: the request key remembers the result of
// an acquire, a release, a force release or a quorum raise for
// RequestTTL, and a resent call replays it instead of counting, queueing,
// granting, deleting or raising again. An owner made for one call (AcquireNew) needs no request key: a
// hold it already has can only be that call's own. A waiter's record is the same in every run of its
// call, so it is queued once and left by value. Leave and pass act only
// on what they find (the waiter's record, a free lock), so a resend grants
// nothing twice.
//
// # Failure
//
// A grant publishes before its first write, so a missing channel
// permission fails the script with the lock and the queue as they were.
// Before its first message it runs a write that changes nothing (GETEX on
// the fencing counter), so a node that refuses writes (a replica, such as
// a demoted master a client still reaches after a failover, or a master
// short of min-replicas-to-write) fails the script before any waiter hears
// of a grant that was never made. A replica that takes writes
// (replica-read-only no) refuses no write, so the probe, and every script
// that takes or renews a hold before anything else, first asks the
// server's role with INFO replication (lua/master.lua; ROLE is refused in
// scripts), and fails with an error that starts with READONLY, as a
// read-only replica's does, on anything but a master: go-redis then drops
// the connection and retries, and a Sentinel client asks for the master
// again.
// An error reply to a script is returned as a redis.Error (errors.As):
// the server answered, so the call ran and failed, rather than possibly
// ran unseen as after a lost reply (Redis keeps what a script wrote
// before its error). Its message names the Lua file and the line in it.
//
// # Lock sets
//
// A lock set is several plain locks taken together (rlock's LockAll) in
// one canonical order: the cluster slot of the name, then the name. Each
// name is its own hash tag and cannot carry '{' or '}', so a name's slot
// is CRC16(name) mod 16384, and a set's names share a slot only by chance.
// AcquireSet (lua/acquire_set.lua) takes, in that order, the members one
// script may touch (one slot on a cluster, any on a single node) as far
// as they are free: each lock nobody holds and nobody waits for is taken
// as acquire.lua takes it (takeFree, lua/take.lua, which both scripts
// run), and the script stops at the first other member and takes nothing
// past it; given a waiter, it queues it there (where one record serves
// every lock: Keys.SharesWaiters). The caller then waits for that member
// as a single lock's waiter, holding what it has, and runs the script
// again for the rest.
// Nobody takes a member past its queue, and every caller takes the keys in
// the one order, so no waits form a circle.
//
// A waiting set must stay out of the queues of the members after the one
// it waits for (k), and must not take them: it cannot be ahead of every
// later call there. The ordering rule lets a holder H of k take a later
// member m next (a Lock, or a set, through H's Context, or under any other
// owner). If the set were ahead of H at m (queued there, or holding m),
// H would wait for the set, which waits for H's k: a circle no lease
// breaks, since both are renewed. H's call is later than the set's, so
// being ahead of it is what "ahead of every later call" asks; Redis cannot
// tell H's call from one that holds nothing, since H's holds may be under
// another owner. So a later call may take a member after k while the set
// waits (rlock's TestLockAllNestedPastWaitingSet guards this; queuing the
// set at every later member of its group deadlocked it).
//
// Nor can a rule that lets such a call pass (naming the owner whose
// holds it may wait under) keep the set ahead of every later set there.
// A later set S2 may take a name b between k and m while the set S waits
// for k: were S ahead of S2 at m, S2 would wait at m holding b, and H,
// taking b next as above, would wait for S2: H for S2, S2 for S, S for H,
// with no owner shared. S2 must take m past S, or give b back and retry,
// which a set never does (rlock's TestLockAllLaterSetPastWaitingSet; it
// fails with the set queued at every later member). So a set is ahead of
// later calls on the member it waits for and those it holds, and no
// further, by necessity: with sets that wait holding what they have, and
// holders that may take later names, no order of waiters can be ahead on
// every member without a circle.
//
// ReleaseSet
// (lua/release_set.lua) leaves one hold of each member as release.lua
// leaves it, with the same function (releaseHold, lua/release_hold.lua),
// each last hold handed to that lock's own next waiter (passOn). Both remember their reply under a request key for replay (as
// a list, lua/replay.lua); an owner made for the acquire needs none: a
// member it holds counts as taken.
//
// # Shared resources
//
// A read-write lock and a semaphore are each a shared resource, one that
// several holders may hold at once, and they are one machine (SharedKeys):
// a resource of a size that several holds share, each taking a weight. A
// semaphore's size is its permits, stored in Redis; a hold takes the
// permits it asked for. A read-write lock's size is WriteWeight; a read
// takes 1 and a write WriteWeight, so a write is alone, and reads share. A
// hold fits when the weights held plus its own are within the size. Each
// resource of name N and kind K ("rw", "sem") lives in N's slot:
//
//	<prefix>{N}:K              the holds: field "<mode>:<owner>" per hold, and
//	                           'used', the sum of their weights
//	<prefix>{N}:K:leases       each hold's lease deadline, in server ms
//	<prefix>{N}:K:queue        the waiters, oldest first (Waiter.sharedRecord; expires)
//	<prefix>{N}:K:fence        the fencing-token counter (expires; see Footprint)
//	<prefix>{N}:K:ids          the hold-ID counter (expires as a fencing counter; see Footprint)
//	<prefix>{N}:sem:size       a semaphore's size (expires; see below)
//	<prefix>{N}:K:req:<id>     a request's remembered result (expires)
//	<prefix>{N}:K:alive:<client> a client's liveness key
//
// Grants go on the plain lock's grant channels. A lease runs out by the
// server clock: every script that reads the holds first drops those whose
// deadline has passed, and the hash and the deadlines expire with the last
// of them, so an abandoned resource goes by itself, and nothing but the
// counter and a semaphore's size is left once the last hold is released,
// until they expire.
//
// A semaphore's size is stored by SetSize, or by the first call that finds
// none, from its handle's size (WithSize). A size found missing is stored
// again from the next handle, which may be larger: so the size must never
// expire while a hold or a waiter admitted under it lives. Every script
// that takes, grants or extends a hold (an acquire, a grant, a waiter's
// look, a re-entry, a renewal), or queues a waiter, keeps the size for two
// of that hold's or waiter's leases from then (PEXPIREAT GT, keepSize in
// lua/shared.lua: one command, only in the scripts that write a deadline);
// a deadline is at most one lease ahead, so the size outlives every hold's
// deadline and the queue's expiry, each by its own lease at least. SetSize keeps it for two of
// the lease it is given (rlock's SetSize: the watchdog lease), and never
// shortens what holds and waiters kept. Once the semaphore is idle past
// that, it is new: the next call stores its handle's size.
//
// The queue is strictly first in, first out: nobody takes past a waiter,
// and a grant admits the run of consecutive heads that fit, stopping at
// the first that does not (a read behind a queued write waits for it; a
// request for 3 permits is not overtaken by one for 1). Whatever frees
// weight (a release, a leave, an expiry found by a look, a larger size),
// and a leave of the queue's head, which the waiters behind it wait for,
// grants in the same script, with one message per grant channel, addressed
// to all its waiters in the run (ParseGrants): a write's release admits k
// queued reads in one script run (up to grantBatch, lua/shared_grant.lua;
// pass runs in the same call admit the rest), whose commands grow with k
// only by its messages and by a read of the queue per factor of four. A dead waiter's
// entry is dropped, what it would have taken freed, and the grant goes on.
//
// Tokens: a write or permits take the next token, as a lock's hold does,
// so each rises strictly. A read takes the counter's value, the token of
// the last write grant, so reads side by side share it, and so do one
// owner's reads in a row. With no counter (none yet, or lost with a
// server's data, or expired; see Footprint) a read takes the next token as
// a write does, and stores it: so no read is below a token handed out
// before it, the reads after it share it, and a write after them is above
// it. A read's floor is the counter, not the clock: a failover that lost
// the last writes but kept an older counter gives reads that older value,
// below the lost writes' tokens, while writes and permits still rise above
// them. A token then cannot tell one hold from the next, so every hold has
// a hold ID (AcquireResult.HoldID, Grant.HoldID) of its own, taken when
// the hold starts (a take, a grant, a read inside a write) and kept by its
// re-entries and by the grants that join it: a release, a renewal and a
// re-entry act on a hold only under its ID, and a force-release returns
// the IDs of the holds it ended, so that a client ends exactly those. IDs
// rise like tokens, the larger of the counter's next value and the server
// clock in µs; the counter expires two of the longest new hold's leases
// past its last ID's time, as a fencing counter does, past which the clock
// alone keeps them rising (unless it steps back by two leases). A read by an owner holding the write is granted at once, past the
// queue and the size, with the write's token: the read stays after the
// write's release (a downgrade), and no write comes between. So a write's
// grant also admits its owner's reads queued behind it, wherever they are
// among the entries one grant may read, and a read whose own call grants
// its owner's write is granted inside it. A read re-enters a read, and a write a write; permits are not
// re-entered. A hold names each waiter a message granted a count of it
// (several, where waiters of one owner are granted together), until that
// waiter's look claims its count or its leave gives it back: so a leave
// gives back only its own waiter's count, and only once, and a client
// hands back a grant that reached no waiter, or reached it too late, by
// that waiter's leave, never by a release, which cannot tell one waiter's
// count from another's. So every count of a hold is given back once, by
// whoever took it, and under the hold's ID: no action meant for one grant
// acts on another.
//
// # Scripts
//
// The scripts are lua/*.lua, run by EVALSHA (EVAL when not cached). Those
// that can leave a lock free run the library first: lua/master.lua (the
// server's role), lua/token.lua (the fencing token), lua/record.lua (the queue record's reader),
// lua/publish.lua (the write probe, and deliver, which publishes a grant
// and judges its waiter's liveness) and lua/grant.lua (the grant, and
// passOn, the tail that grants or deletes). Quorum mode's raise
// (lua/quorum_raise.lua) runs lua/master.lua and lua/token.lua only. A
// shared resource's
// scripts (lua/shared_*.lua) run lua/shared.lua (the holds) and
// lua/shared_grant.lua (their grant) in place of lua/grant.lua. The
// Redisson format's scripts that set a lease run lua/redisson_lease.lua
// first, whose one rule, that a lock's expiry only moves later, is their
// one deliberate difference from Redisson's own (see RedissonNamespace).
// The free path (a Lock+Unlock nobody else holds or waits for) is the
// common one, and every function a script makes, every key and argument it
// is passed and every number it prints costs each call server time: so
// lua/acquire.lua and lua/release.lua run before the library (only
// lua/master.lua, lua/token.lua and lua/take.lua before acquire.lua, and
// lua/release_hold.lua before release.lua) and end every call
// that grants nothing; lua/acquire_queue.lua and lua/release_pass.lua,
// after it, do the rest, reading their head's locals. TestFreePathCommands
// pins the free path's commands; BenchmarkFreePathServerTime compares its
// server time with Redisson's scripts.
// Every script keeps these conventions (the order of arguments holds for
// the lock's own scripts, not the Redisson ones):
//   - a header says what it does, then names every key and argument, one
//     a line, as "KEYS[n] name: meaning" and "ARGV[n] name: meaning", then
//     what it returns;
//   - the first lines read each entry once into a local of that name, and
//     nothing below reads KEYS or ARGV; a flag ('1' or '0') is read as a
//     boolean there, and a duration in ms is named with the suffix Ms;
//   - arguments come in one order: the owner and its token, the call's own
//     values, the waiter's, and the publish command last;
//   - library files define local functions only, and read no KEYS or ARGV;
//   - acquire.lua's waiter arguments and request key are absent from a
//     call that does not use them (each costs the free path server time);
//     its publish command is still last.
package reentrant
