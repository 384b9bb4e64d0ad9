package rlock

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// Issue 31, failovers under load: loadProcs child processes of loadWorkers
// workers each run a member's operations on loadLocks resources through
// Sentinel, while the parent makes the replica lag (its relay holds the
// replication stream for random whiles) and SIGKILLs the master at a
// random moment, loadFailovers times; each time the sentinel promotes the
// replica and the killed server comes back as the new master's replica.
// The multi-process checker (familyCheckScript) keeps its ledger on a
// server of its own, outside the failing deployment, and sees every hold
// the workers were told they had, from the grant until the worker gives
// it up or its Context ends.
const (
	loadFailovers = 20
	loadProcs     = 2
	loadWorkers   = 3
	loadLocks     = 3
	// loadHold bounds a hold's hold time: long enough for a hold granted
	// while the relay held, before a kill, to outlast the failover (about
	// a second from the kill to the promotion) and the next grant, so that
	// a lost grant can meet a second holder.
	loadHold = 4 * time.Second
	// loadLease is the watchdog lease: a renewed hold outlives a
	// failover's outage of acknowledged renewals (about 2s from the last
	// one before the kill; the lease allows two thirds of it, 4s), so its
	// Context does not end at its validity, 1% of the lease before Redis
	// frees it, which a holder's give to the checker would have to beat.
	loadLease = 6 * time.Second
	// loadFixedLease is the fixed lease: it outlives loadHold by far, so a
	// hold that takes one ends by its release, not at its deadline.
	loadFixedLease = 6 * time.Second
	// loadAckTimeout is the acknowledgements' timeout: below the relay's
	// longest hold, so that some grants miss it.
	loadAckTimeout = 300 * time.Millisecond
	// loadRelayHold and loadRelayRelease bound the lag's random whiles:
	// how long the relay holds the stream, and how long it then forwards.
	loadRelayHold    = 500 * time.Millisecond
	loadRelayRelease = 200 * time.Millisecond
	// loadKillAfter bounds how long the relay holds before the kill: from
	// loadKillAfter to twice that, so that some holds were granted in it.
	loadKillAfter = 600 * time.Millisecond
	// loadControlFailovers bounds the control's failovers: it stops at the
	// first overlap, which came about once in five failovers (5 in a run
	// of 20, where 22 holds were lost; with holds of at most 2.5s, the
	// first came after 2, 3, 12 and 13): 40 miss it about once in 10^4.
	loadControlFailovers = 40
	// loadBound bounds a run: its failovers take about 2.5s each.
	loadBound = 4 * time.Minute
)

// lockFamilyOps are the plain lock's operations: locks waiting, cancelled
// while they may wait, and bounded tries, and re-entries.
func lockFamilyOps(c *Client, name string) []familyOp {
	lock := func(ctx context.Context, opts ...LockOption) (*Lock, error) { return c.Lock(ctx, name, opts...) }
	try := func(ctx context.Context, opts ...LockOption) (*Lock, error) { return c.TryLock(ctx, name, opts...) }
	take := lockTaking(lock, "x", 1)
	return []familyOp{
		familyOnce(take, familyWaits), familyOnce(take, familyWaits), familyOnce(take, familyCancelled),
		familyOnce(lockTaking(try, "x", 1), familyBounded), nestedOnce(take, lock),
	}
}

// failoverRun is what runFailovers saw.
type failoverRun struct {
	failovers int
	figures   map[string]int64 // summed over the resources
	overlaps  []string         // the checker's log of them
	errs      []string         // the children's errors (a sample)
	losses    []string         // why holds were lost (a sample)
	promotion []time.Duration  // each failover's, from the kill
}

// runFailovers runs member m's operations through failovers failovers
// (fewer if stopAtOverlap and the checker found an overlap), with acks
// as the children's helperAcks, and returns what it saw. The children
// run on until they take a hold after the last failover.
func runFailovers(t *testing.T, m familyMember, acks string, failovers int, stopAtOverlap bool) failoverRun {
	ctx, cancel := context.WithTimeout(context.Background(), loadBound)
	defer cancel()
	s := redistest.StartSentinel(t, redistest.WithRelays())
	ledgerSrv := redistest.Start(t)
	ledger := admin(t, ledgerSrv)
	var names []string
	var ks []*familyChecker
	for i := range loadLocks {
		names = append(names, fmt.Sprintf("load-%s-%d", m.kind, i))
		ks = append(ks, newFamilyChecker(ledger, m, names[i]))
	}
	var kids []*child
	for range loadProcs {
		kids = append(kids, startChild(t, loadBound+time.Minute, helperEnv+"=checker", helperSentinel+"="+s.Addr,
			helperLedger+"="+ledgerSrv.Addr, helperLock+"="+strings.Join(names, ","), helperKind+"="+m.kind,
			helperLease+"="+loadLease.String(), helperFixed+"="+loadFixedLease.String(), helperHold+"="+loadHold.String(),
			helperWorkers+"="+strconv.Itoa(loadWorkers), helperAcks+"="+acks))
	}
	var r failoverRun
	figure := func(name string) int64 { return sumFigures(ctx, ks)[name] }
	require.Eventually(t, func() bool { return figure("held") > 0 }, 30*time.Second, 10*time.Millisecond, "no hold before the first failover")
	for r.failovers < failovers && !(stopAtOverlap && figure("overlaps") > 0) {
		require.NoError(t, ctx.Err(), "%d failovers took too long", r.failovers)
		relay := s.RelayOf(s.Master)
		lagFor(relay, rand.N(time.Second))
		relay.Hold() // the kill comes while the relay holds what the last whiles granted
		time.Sleep(loadKillAfter + rand.N(loadKillAfter))
		r.promotion = append(r.promotion, s.KillMaster())
		r.failovers++
	}
	// A release the failover lost leaves its hold until its lease ends.
	before := figure("held")
	require.Eventually(t, func() bool { return figure("held") > before }, 2*loadLease, 10*time.Millisecond,
		"no hold after the last failover")
	for _, ch := range kids {
		ch.finish()
	}
	r.figures = sumFigures(ctx, ks)
	for _, k := range ks {
		r.overlaps = append(r.overlaps, ledger.LRange(ctx, k.keys[4], 0, 9).Val()...)
		r.errs = append(r.errs, ledger.LRange(ctx, k.errs, 0, 4).Val()...)
		r.losses = append(r.losses, ledger.LRange(ctx, k.losses, 0, 4).Val()...)
	}
	t.Logf("%s, acks %q: %d failovers (promoted after %v), figures %v; errors, a sample: %q; losses, a sample: %q",
		m.kind, acks, r.failovers, r.promotion, r.figures, r.errs, r.losses)
	return r
}

// sumFigures is the checkers' figures, summed.
func sumFigures(ctx context.Context, ks []*familyChecker) map[string]int64 {
	sum := map[string]int64{}
	for _, k := range ks {
		for f, v := range k.figures(ctx) {
			sum[f] += v
		}
	}
	return sum
}

// lagFor makes the master's replica lag behind relay for d: the relay
// holds the stream for random whiles (below loadRelayHold), forwarding
// between them (below loadRelayRelease). It returns at d, holding or not:
// the kill that follows may find writes held, which it loses.
func lagFor(relay *redistest.ReplicationRelay, d time.Duration) {
	end := time.Now().Add(d)
	for holding := true; time.Now().Before(end); holding = !holding {
		span := rand.N(loadRelayRelease)
		if holding {
			relay.Hold()
			span = rand.N(loadRelayHold)
		} else {
			relay.Release()
		}
		time.Sleep(min(span, time.Until(end)))
	}
}

// Issue 31: with acknowledgements, no hold a caller was told it had meets
// another across 20 failovers under load, though the failovers lose what
// the lagging replica had not yet got: the grants it had not acknowledged
// failed with ErrNotReplicated instead.
func TestFailoversUnderLoadWithAcks(t *testing.T) {
	for _, m := range []familyMember{plainMember, rwMember, semMember} {
		t.Run(m.kind, func(t *testing.T) {
			r := runFailovers(t, m, loadAckTimeout.String(), loadFailovers, false)
			require.Zero(t, r.figures["overlaps"], "overlapping holders: %q", r.overlaps)
			require.Equal(t, loadFailovers, r.failovers)
			require.Positive(t, r.figures["notreplicated"], "no grant missed its acknowledgement: the lag did nothing")
		})
	}
}

// Issue 31, the control of TestFailoversUnderLoadWithAcks: the same
// harness without acknowledgements finds two holders, once a failover
// loses a grant made while the relay held the stream, and another worker
// gets the lock on the promoted replica before the first holder's client
// finds the loss. Most lost holds do not get that far: the client's check
// after its pub/sub comes back ends their Context first (see
// loadControlFailovers).
func TestFailoversUnderLoadWithoutAcksShowTwoHolders(t *testing.T) {
	r := runFailovers(t, plainMember, "0s", loadControlFailovers, true)
	require.Positive(t, r.figures["overlaps"], "no overlap in %d failovers", r.failovers)
	t.Logf("the first overlap after %d failovers: %q", r.failovers, r.overlaps)
}
