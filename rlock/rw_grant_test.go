package rlock

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// A write's release admits every read queued behind it in one script
// run, with one grant message per client however many of its waiters it
// admits (k reads on two clients: two messages). The commands the server
// ran for the release are logged.
func TestRWWriteReleaseAdmitsQueuedReadsInOneMessagePerClient(t *testing.T) {
	for _, k := range []int{1, 10, 100} {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			ctx, srv := serve(t)
			rdb := admin(t, srv)
			writer := newClient(t, srv)
			readers := []*Client{newClient(t, srv), newClient(t, srv)}
			w, err := writer.RWLock("batch").Lock(ctx)
			require.NoError(t, err)
			var got sync.WaitGroup
			reads := make(chan *Lock, k)
			for i := range k {
				rw := readers[i%2].RWLock("batch")
				got.Go(func() {
					r, err := rw.RLock(ctx)
					if assertNoError(t, err) {
						reads <- r
					}
				})
			}
			waitForRWQueued(t, srv, "batch", int64(k))
			before := commandCalls(t, rdb)
			require.NoError(t, w.Unlock(ctx))
			got.Wait()
			after := commandCalls(t, rdb)
			close(reads)
			ran := map[string]int64{}
			for name, n := range after {
				if d := n - before[name]; d > 0 {
					ran[name] = d
				}
			}
			t.Logf("k=%d: the release and the reads' wake-ups ran %v", k, ran)
			require.EqualValues(t, min(k, 2), ran["publish"]+ran["spublish"], "one grant message per reader client")
			for r := range reads {
				require.Equal(t, w.Token(), r.Token())
				require.NoError(t, r.Unlock(ctx))
			}
			requireOnlyFence(t, rdb, "batch")
		})
	}
}

// Writers are not starved, and the queue is FIFO with a run of reads as
// one unit: while reads hold, a queued write stops every read that comes
// after it; its reads' release admits it; its release admits the reads
// queued behind it together, and a write queued after those waits for
// them.
func TestRWPhaseFairOrder(t *testing.T) {
	ctx, srv := serve(t)
	c := newClient(t, srv)
	rw := c.RWLock("fair")
	first, err := rw.RLock(ctx)
	require.NoError(t, err)
	var mu sync.Mutex
	var order []string
	var all sync.WaitGroup
	enter := func(name string, write bool, queued int64) {
		all.Go(func() {
			take := rw.RLock
			if write {
				take = rw.Lock
			}
			l, err := take(ctx)
			if !assertNoError(t, err) {
				return
			}
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			assertNoError(t, l.Unlock(ctx))
		})
		waitForRWQueued(t, srv, "fair", queued)
	}
	enter("w1", true, 1)
	enter("r1", false, 2) // came after w1: waits for it though a read holds
	enter("r2", false, 3)
	enter("w2", true, 4)
	enter("r3", false, 5)
	// Still held by the first read: nobody queued has got in.
	mu.Lock()
	require.Empty(t, order)
	mu.Unlock()
	require.NoError(t, first.Unlock(context.Background()))
	all.Wait()
	require.Len(t, order, 5)
	require.Equal(t, "w1", order[0])
	require.ElementsMatch(t, []string{"r1", "r2"}, order[1:3], "the reads behind w1 go together, before w2")
	require.Equal(t, []string{"w2", "r3"}, order[3:])
}
