package rlock

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rwChecker sees every RW hold taken and given up, and fails the test when
// a writer ever holds alongside any other owner's hold.
type rwChecker struct {
	t       *testing.T
	mu      sync.Mutex // guards the holders
	writer  string
	readers map[string]int
	reads   atomic.Int64 // read holds taken while another owner's read was held
}

func (k *rwChecker) took(owner string, write bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case write && (k.writer != "" || len(k.readers) > 0):
		k.t.Errorf("a writer got in beside writer %q and %d readers", k.writer, len(k.readers))
	case !write && k.writer != "" && k.writer != owner:
		k.t.Errorf("a reader got in beside writer %q", k.writer)
	}
	if write {
		k.writer = owner
		return
	}
	if len(k.readers) > 0 {
		k.reads.Add(1)
	}
	k.readers[owner]++
}

// gives is called before the Unlock that gives the hold up.
func (k *rwChecker) gives(owner string, write bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if write {
		k.writer = ""
		return
	}
	if k.readers[owner]--; k.readers[owner] == 0 {
		delete(k.readers, owner)
	}
}

// Reads and writes churn on one RW lock from owners on two clients, one
// of which sees its connections fail (pub/sub ones too) as they are killed
// over and over: any call may be cancelled at a random moment; holds are
// re-entered (read in read, write in write) and downgraded (a read inside
// the write, which outlives it). A writer never holds beside another
// owner, reads do overlap, and in the end no client has a hold or a
// renewal and nothing is left in Redis but the fence and expiring records.
func TestRWExclusionUnderAttack(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	// A clean-up (the give-back of an acquire whose reply was lost, or of
	// a grant that raced a cancel) retries until Redis answers: with
	// connections killed every few ms it may take many tries, but a hold
	// it gives back is gone soon after, far within the 30 s lease.
	clients, endAttacks := underAttack(ctx, t, srv, rdb)
	k := &rwChecker{t: t, readers: map[string]int{}}
	until := time.Now().Add(3 * time.Second)
	var workers sync.WaitGroup
	for i := range 8 {
		rw := clients[i%2].RWLock("rwchurn")
		rng := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
		workers.Go(func() {
			for time.Now().Before(until) && !t.Failed() {
				rwChurn(ctx, t, rw, rng, k)
			}
		})
	}
	workers.Wait()
	endAttacks()
	require.Positive(t, k.reads.Load(), "reads never overlapped")
	require.Eventually(t, func() bool {
		return len(clients[0].table.holdsOf(everyHold))+len(clients[1].table.holdsOf(everyHold)) == 0 &&
			clients[0].wd.Len()+clients[1].wd.Len() == 0
	}, 5*time.Second, 10*time.Millisecond, "a hold, or its renewal, outlived its last Unlock")
	requireOnlyFence(t, rdb, "rwchurn")
}

// stuckWait is the longest a wait of rwChurn may take. A hold that a lost
// clean-up left in Redis, with no hold in either client's table, ends only
// with its lease, the watchdog's 30 s: every hold is taken within the
// test's 3 s, so a wait for one lasts past 27 s. A wait for live holds and
// clean-ups is far shorter, but not bounded by a few seconds: with
// connections killed every few ms on 2 loaded cores, a clean-up's retries
// took waits to 5.4 s and 6.7 s in two full-suite runs (no lease ran out
// there). Half the lease tells the two apart.
const stuckWait = 15 * time.Second

// rwChurn is one owner's turn on rw: a read or a write, which may be
// cancelled at any moment, then re-entries or a downgrade, and the
// Unlocks.
func rwChurn(ctx context.Context, t *testing.T, rw *RWLock, rng *rand.Rand, k *rwChecker) {
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if rng.IntN(3) == 0 {
		defer time.AfterFunc(randomStep(rng), cancel).Stop()
	}
	write := rng.IntN(3) == 0
	take := rw.RLock
	if write {
		take = rw.Lock
	}
	began := time.Now()
	l, err := take(lctx)
	if waited := time.Since(began); waited > stuckWait {
		t.Errorf("a wait took %v: a hold nobody had was left in Redis", waited)
	}
	if err != nil {
		return // cancelled, or its connection was killed: it must leave nothing held
	}
	k.took(l.Owner(), write)
	time.Sleep(randomStep(rng) / 4)
	switch n := rng.IntN(3); {
	case n == 0 && write: // downgrade: a read inside the write outlives it
		down, err := rw.RLock(l.Context())
		if err == nil {
			k.took(down.Owner(), false)
		}
		k.gives(l.Owner(), true)
		unlockFully(ctx, t, l, false)
		if err == nil {
			time.Sleep(randomStep(rng) / 4)
			k.gives(down.Owner(), false)
			unlockFully(ctx, t, down, false)
		}
		return
	case n == 1: // re-entry in the same mode
		if again, err := take(l.Context()); err == nil {
			unlockFully(ctx, t, again, rng.IntN(4) == 0)
		}
	}
	k.gives(l.Owner(), write)
	unlockFully(ctx, t, l, rng.IntN(4) == 0)
}
