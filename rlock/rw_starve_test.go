package rlock

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Writers are not starved (issue 24, property 2): readers overlap
// continuously, each holding readHold and taking the read again at once,
// staggered so that some read always holds. A write queued among them is
// granted once the reads that held when it queued are released: by the
// time it queued plus readHold plus 50 ms. A read whose call began after
// the write queued is granted after the write's release.
func TestRWWriterIsNotStarvedByOverlappingReads(t *testing.T) {
	const (
		readHold = 200 * time.Millisecond
		readers  = 4
		rounds   = 3
		slack    = 50 * time.Millisecond
	)
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	rw := newClient(t, srv).RWLock("starve")
	type read struct{ called, granted time.Time }
	var mu sync.Mutex
	var reads []read

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range readers {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * readHold / readers)
			for {
				select {
				case <-stop:
					return
				default:
				}
				called := time.Now()
				r, err := rw.RLock(ctx)
				if !assertNoError(t, err) {
					return
				}
				mu.Lock()
				reads = append(reads, read{called, time.Now()})
				mu.Unlock()
				time.Sleep(readHold)
				assertNoError(t, r.Unlock(ctx))
			}
		})
	}
	defer func() { close(stop); wg.Wait(); requireOnlyFence(t, rdb, "starve") }()

	time.Sleep(readHold) // every reader in its loop
	for round := range rounds {
		called := time.Now()
		got := make(chan acquired, 1)
		go func() {
			w, err := rw.Lock(ctx)
			got <- acquired{lock: w, at: time.Now(), err: err}
		}()
		// The write queues at once: reads hold. Reads begun after this
		// must come after it.
		require.Eventually(t, func() bool { return rdb.LLen(ctx, rwKey("starve")+":queue").Val() >= 1 },
			readHold, time.Millisecond, "round %d: the write did not queue", round)
		queued := time.Now()
		res := within(t, got, "the write was not granted")
		require.NoError(t, res.err)
		w := res.lock
		require.LessOrEqual(t, res.at.Sub(called), readHold+slack,
			"round %d: the write waited past the reads that held when it queued", round)
		time.Sleep(10 * time.Millisecond) // the write's hold
		released := time.Now()
		require.NoError(t, w.Unlock(context.Background()))

		mu.Lock()
		for _, r := range reads {
			if r.called.After(queued) {
				require.True(t, r.granted.After(released),
					"round %d: a read called %v after the write queued was granted before its release",
					round, r.called.Sub(queued))
			}
		}
		mu.Unlock()
		time.Sleep(readHold) // the reads overlap again
	}
}
