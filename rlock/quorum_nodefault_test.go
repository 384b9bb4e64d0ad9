package rlock

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// Issue 33, mutual exclusion under node faults: children in processes of
// their own (runQuorumChild) take one lock on a quorum of 3 or 5 nodes
// while the test SIGKILLs a child now and then and pauses (SIGSTOP), kills
// and restarts one node at a time at random moments. A ledger on a
// redis-server of its own, outside the quorum, records every hold: the
// test finds no two holds whose Contexts were live at once, and tokens
// strictly increasing from holder to holder.

const (
	// quorumFaultLease is the children's watchdog lease: short, so that a
	// node's outage of a lease or two fits many times in a run.
	quorumFaultLease = time.Second
	// quorumFaultRun is how long the children run under faults, per
	// scenario; four scenarios fit in about a minute and a half.
	quorumFaultRun = 15 * time.Second
)

// nodeFaults is how a scenario restarts its nodes: at once with every
// write kept (persistent, AOF fsynced per write), or empty after an outage
// of at least outage. majority, when not 0, is the children's majority
// instead of ⌊N/2⌋+1 (helperMajority): a control's.
type nodeFaults struct {
	persistent bool
	outage     time.Duration
	majority   int
}

// Issue 33: 0 overlaps among live holds and strictly increasing tokens,
// on 3 and on 5 nodes, with restarts that keep the counters (appendfsync
// always) and with restarts that lose them but stay out for more than a
// lease.
func TestQuorumExclusionUnderNodeFaults(t *testing.T) {
	for _, n := range []int{3, 5} {
		t.Run(strconv.Itoa(n)+"/appendfsync-always", func(t *testing.T) {
			holds := runQuorumFaults(t, n, nodeFaults{persistent: true})
			require.Empty(t, overlaps(holds), "holds whose Contexts were live at once")
			require.Empty(t, tokenRegressions(holds), "tokens not strictly increasing from holder to holder")
		})
		t.Run(strconv.Itoa(n)+"/delayed-restart", func(t *testing.T) {
			holds := runQuorumFaults(t, n, nodeFaults{outage: quorumFaultLease + quorumFaultLease/4})
			require.Empty(t, overlaps(holds), "holds whose Contexts were live at once")
			require.Empty(t, tokenRegressions(holds), "tokens not strictly increasing from holder to holder")
		})
	}
	// The control: the same run with the children's holds taken on one
	// node instead of a majority (helperMajority=1) finds holds whose
	// Contexts were live at once: the check above sees the hazard when the
	// protection is off. (Tokens need no control here: the nodes share
	// this machine's clock, which orders them; TestQuorumRaiseOrdersTokens
	// is the control for round 2.)
	t.Run("3/control-one-node", func(t *testing.T) {
		holds := runQuorumFaults(t, 3, nodeFaults{persistent: true, majority: 1})
		found := overlaps(holds)
		t.Logf("%d overlaps among %d holds", len(found), len(holds))
		require.NotEmpty(t, found, "a hold on one node of 3 is no lock")
	})
}

// runQuorumFaults runs familyProcs quorum children on n nodes for
// quorumFaultRun under faults (quorumFaultLoop), then stops them, checks
// that the run did what it set out to do, and returns the ledger's holds.
func runQuorumFaults(t *testing.T, n int, f nodeFaults) []ledgerHold {
	redistest.Binary(t)
	var args []string
	if f.persistent {
		args = redistest.AppendFsyncAlways
	}
	nodes := startNodes(t, n, args...)
	addrs := make([]string, n)
	for i, node := range nodes {
		addrs[i] = node.Addr
	}
	ledgerSrv := redistest.Start(t)
	ledger := ledgerSrv.Admin()
	env := []string{helperEnv + "=quorum", helperAddr + "=" + ledgerSrv.Addr,
		helperNodes + "=" + strings.Join(addrs, ","), helperLock + "=quorum-faults", helperLease + "=" + quorumFaultLease.String()}
	if f.majority != 0 {
		env = append(env, helperMajority+"="+strconv.Itoa(f.majority))
	}
	start := func() *child { return startChild(t, quorumFaultRun+time.Minute, env...) }
	faults := quorumFaultLoop(t, nodes, f, start)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	holds := readLedger(ctx, t, ledger)
	counts := ledger.HGetAll(ctx, ledgerCounts).Val()
	t.Logf("%d nodes, %+v: %d holds recorded, counts %v, faults %v", n, f, len(holds), counts, faults)
	require.Empty(t, ledger.LRange(ctx, ledgerErrors, 0, 20).Val(), "the children's unexpected errors")
	// The children hold a few hundred times in a run (the quorum's
	// contended throughput, on 2 loaded cores); 50 is a run that worked.
	require.Greater(t, len(holds), 50, "too few holds to judge")
	require.Positive(t, faults["pause"], "no node was paused")
	require.Positive(t, faults["restart"], "no node was restarted")
	require.Positive(t, faults["child"], "no child was killed")
	return holds
}

// quorumFaultLoop keeps familyProcs children from start running for
// quorumFaultRun, and every 150-450 ms may SIGKILL one (and start a fresh
// one), or fault a node at random: pause it for up to two leases, or kill
// it and restart it as f says, the two in turn. One node at most is out at
// a time. Then it ends
// the fault, stops the children (which must end cleanly) and returns the
// faults it made, by kind.
func quorumFaultLoop(t *testing.T, nodes []*redistest.Server, f nodeFaults, start func() *child) map[string]int {
	kids := make([]*child, familyProcs)
	for i := range kids {
		kids[i] = start()
	}
	made := map[string]int{}
	var out *redistest.Server // the node paused or killed, if any
	var back time.Time        // when it comes back
	var paused bool
	for end := time.Now().Add(quorumFaultRun); time.Now().Before(end); {
		time.Sleep(150*time.Millisecond + rand.N(300*time.Millisecond))
		requireRunning(t, kids)
		switch {
		case out != nil && time.Now().After(back):
			endFault(out, paused)
			out = nil
		case rand.IntN(4) == 0:
			i := rand.IntN(len(kids))
			kids[i].kill()
			kids[i] = start()
			made["child"]++
		case out == nil && rand.IntN(2) == 0:
			node := nodes[rand.IntN(len(nodes))]
			switch {
			case made["pause"] <= made["restart"]:
				node.Pause()
				out, paused, back = node, true, time.Now().Add(rand.N(2*quorumFaultLease))
				made["pause"]++
			case f.persistent:
				node.Restart()
				made["restart"]++
			default:
				node.Kill()
				out, paused, back = node, false, time.Now().Add(f.outage)
				made["restart"]++
			}
		}
	}
	if out != nil {
		endFault(out, paused)
	}
	for _, ch := range kids {
		ch.finish()
	}
	return made
}

// endFault resumes a paused node, or relaunches a killed one.
func endFault(node *redistest.Server, paused bool) {
	if paused {
		node.Resume()
		return
	}
	node.Relaunch()
}

// ledgerHold is one hold as the ledger has it. A hold without an end is
// one whose child was killed while it held.
type ledgerHold struct {
	name       string
	token      uint64
	start, end int64 // wall clock, ns; end 0 when not recorded
	live       bool  // its Context was live at end
}

// readLedger returns the holds the ledger recorded, by their start.
func readLedger(ctx context.Context, t *testing.T, ledger *redis.Client) []ledgerHold {
	t.Helper()
	byName := map[string]*ledgerHold{}
	var holds []*ledgerHold
	for _, line := range ledger.LRange(ctx, ledgerStarts, 0, -1).Val() {
		h := &ledgerHold{}
		_, err := fmt.Sscanf(line, "%s %d %d", &h.name, &h.token, &h.start)
		require.NoError(t, err, line)
		byName[h.name] = h
		holds = append(holds, h)
	}
	for _, line := range ledger.LRange(ctx, ledgerEnds, 0, -1).Val() {
		var name string
		var end int64
		var live bool
		_, err := fmt.Sscanf(line, "%s %d %t", &name, &end, &live)
		require.NoError(t, err, line)
		h, ok := byName[name]
		require.True(t, ok, "an end without a start: %s", line)
		h.end, h.live = end, live
	}
	out := make([]ledgerHold, len(holds))
	for i, h := range holds {
		out[i] = *h
	}
	slices.SortFunc(out, func(a, b ledgerHold) int { return int(a.start - b.start) })
	return out
}

// overlaps are the pairs of holds, each ended with its Context live, of
// which one started before the other ended: both were then held, and
// their Contexts live (a Context that was live at a hold's end was live
// throughout it). holds are sorted by start.
func overlaps(holds []ledgerHold) []string {
	var out []string
	var last *ledgerHold // the live hold that ends last among those started so far
	for i := range holds {
		h := &holds[i]
		if h.end == 0 || !h.live {
			continue
		}
		if last != nil && h.start < last.end {
			out = append(out, fmt.Sprintf("%+v and %+v", *last, *h))
		}
		if last == nil || h.end > last.end {
			last = h
		}
	}
	return out
}

// tokenRegressions are the holds, in the order they started, whose token
// is 0 or not above the token of the hold before: each took the lock
// after the one before it had it, or overlaps found them together.
func tokenRegressions(holds []ledgerHold) []string {
	var out []string
	for i, h := range holds {
		if h.token == 0 || (i > 0 && h.token <= holds[i-1].token) {
			out = append(out, fmt.Sprintf("%+v after %+v", h, holds[max(i-1, 0)]))
		}
	}
	return out
}

// The ledger's checks find what they look for: a live hold that starts
// before another live one ends, across any number of holds between; and
// a token 0, repeated or lower than the one before.
func TestLedgerChecksFindOverlapsAndRegressions(t *testing.T) {
	h := func(token uint64, start, end int64, live bool) ledgerHold {
		return ledgerHold{name: strconv.FormatUint(token, 10), token: token, start: start, end: end, live: live}
	}
	clean := []ledgerHold{h(1, 0, 10, true), h(2, 10, 20, true), h(3, 15, 40, false), h(4, 30, 0, false), h(5, 50, 60, true)}
	require.Empty(t, overlaps(clean), "a lost hold's and a killed child's are not live")
	require.Empty(t, tokenRegressions(clean))
	require.Len(t, overlaps([]ledgerHold{h(1, 0, 100, true), h(2, 10, 20, true), h(3, 30, 40, true)}), 2,
		"both holds inside the long one")
	require.Len(t, tokenRegressions([]ledgerHold{h(0, 0, 1, true)}), 1, "token 0")
	require.Len(t, tokenRegressions([]ledgerHold{h(2, 0, 1, true), h(2, 5, 6, true), h(1, 7, 8, false)}), 2,
		"a token repeated, and one lower")
}
