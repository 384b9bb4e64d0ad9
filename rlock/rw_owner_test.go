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

// An owner's two writes queued behind another owner's write are one hold
// once that write ends: the grant to one wakes the other, which re-enters
// it (the plain lock's TestSharedOwnerWaitersReenterAtTheGrant, for the
// RW lock's write), within fast, far below the 10 s of their next look.
func TestOwnersQueuedWritesReenterAtTheGrant(t *testing.T) {
	ctx, srv := serve(t)
	holder, w1, w2 := newClient(t, srv), newClient(t, srv), newClient(t, srv)
	const name = "own-writes"
	w, err := holder.RWLock(name).Lock(ctx)
	require.NoError(t, err)
	job := WithOwner(ctx, "job")
	first := rlockInBackground(job, w1.RWLock(name), true)
	waitForRWQueued(t, srv, name, 1)
	second := rlockInBackground(job, w2.RWLock(name), true)
	waitForRWQueued(t, srv, name, 2)
	require.NoError(t, w.Unlock(ctx))
	a, b := receive(t, first), receive(t, second)
	require.Equal(t, a.Token(), b.Token(), "one write of the owner")
	st, err := holder.RWLock(name).Inspect(ctx)
	require.NoError(t, err)
	require.Equal(t, "job", st.Writer)
	require.EqualValues(t, 2, st.WriteCount)
	require.NoError(t, a.Unlock(ctx))
	require.NoError(t, b.Unlock(ctx))
}
