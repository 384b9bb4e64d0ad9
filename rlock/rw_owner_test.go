package rlock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A read inside its owner's own write is granted at once, past the queue:
// so an owner's read that queued before its write was granted is granted
// with that write, wherever it queued, and does not wait for its next look.
// Every client has the default 30 s lease, so a look comes 10 s after the
// last; fast (3 s) is far below that, and far above the milliseconds a
// grant takes on a loaded machine.
func TestOwnersQueuedReadIsGrantedWithItsWrite(t *testing.T) {
	ctx, srv := serve(t)
	for _, between := range []bool{false, true} {
		name := "own-read"
		if between {
			name = "own-read-behind-a-write"
		}
		t.Run(name, func(t *testing.T) {
			holder, writer, reader, other := newClient(t, srv), newClient(t, srv), newClient(t, srv), newClient(t, srv)
			r, err := holder.RWLock(name).RLock(ctx)
			require.NoError(t, err)
			job := WithOwner(ctx, "job")
			write := rlockInBackground(job, writer.RWLock(name), true)
			waitForRWQueued(t, srv, name, 1)
			var last <-chan acquired
			if between {
				last = rlockInBackground(ctx, other.RWLock(name), true)
				waitForRWQueued(t, srv, name, 2)
			}
			read := rlockInBackground(job, reader.RWLock(name), false)
			waitForRWQueued(t, srv, name, map[bool]int64{false: 2, true: 3}[between])

			require.NoError(t, r.Unlock(ctx))
			w := receive(t, write)
			got := receiveBy(t, read, time.Now().Add(fast))
			require.Equal(t, w.Token(), got.lock.Token(), "a read inside the write has the write's token")
			require.NoError(t, w.Unlock(ctx))
			require.NoError(t, got.lock.Unlock(ctx))
			if between {
				require.NoError(t, receive(t, last).Unlock(ctx))
			}
		})
	}
}
