package rlock

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// rwBatchRace is the queue of the cancellation tests: a write held, then
// queued behind it a read whose call the test cancels, another client's
// read, and a write. Every client's lease is longLease, so a hold that
// leaks would hold the last write off for 30 s.
type rwBatchRace struct {
	t              *testing.T
	srv            *redistest.Server
	name           string
	victim         *Client // the cancelled read's
	writer, reader *RWLock // the held write's and the other read's
	last           *RWLock // the queued write's
}

func newRWBatchRace(t *testing.T, srv *redistest.Server, name string, victim *Client) *rwBatchRace {
	lease := WithWatchdogLease(longLease)
	return &rwBatchRace{t: t, srv: srv, name: name, victim: victim,
		writer: newClient(t, srv, lease).RWLock(name), reader: newClient(t, srv, lease).RWLock(name),
		last: newClient(t, srv, lease).RWLock(name)}
}

// proxiedRWBatchRace is a race on a server of its own, whose cancelled
// call's client goes through a proxy.
func proxiedRWBatchRace(t *testing.T, name string) (context.Context, *rwBatchRace, *proxy) {
	ctx, srv := serve(t)
	px := startProxy(t, srv.Addr)
	victim, err := New(px.client(t), WithWatchdogLease(longLease))
	require.NoError(t, err)
	t.Cleanup(func() { _ = victim.Close() })
	return ctx, newRWBatchRace(t, srv, name, victim), px
}

// queue takes the write and queues the three behind it, the cancelled
// call with vctx (a write instead of a read if victimWrites); it returns
// the write, and the results of the cancelled call, the other read and
// the last write.
func (r *rwBatchRace) queue(ctx, vctx context.Context, victimWrites bool) (w *Lock, victim, read, last <-chan acquired) {
	t := r.t
	w, err := r.writer.Lock(ctx)
	require.NoError(t, err)
	victim = rlockInBackground(vctx, r.victim.RWLock(r.name), victimWrites)
	waitForRWQueued(t, r.srv, r.name, 1)
	read = rlockInBackground(ctx, r.reader, false)
	waitForRWQueued(t, r.srv, r.name, 2)
	last = rlockInBackground(ctx, r.last, true)
	waitForRWQueued(t, r.srv, r.name, 3)
	return w, victim, read, last
}

// finish releases the other read, which must admit the last write at
// once, releases that, and checks that nothing is left: no queue entry,
// no hold in Redis, none in the cancelled read's client, no renewal.
func (r *rwBatchRace) finish(ctx context.Context, read, last <-chan acquired) {
	t := r.t
	require.NoError(t, receive(t, read).Unlock(ctx))
	l := receive(t, last)
	st, err := r.writer.Inspect(ctx)
	require.NoError(t, err)
	require.Equal(t, RWState{Readers: map[string]int64{}, Writer: l.Owner(), WriteCount: 1,
		TTL: st.TTL, LastToken: l.Token()}, st, "the last write holds alone, nobody queued")
	require.NoError(t, l.Unlock(ctx))
	r.requireNothingLeft()
}

// requireNothingLeft checks that the cancelled read's client has no hold
// and no renewal, and that Redis has nothing of the lock but its fence.
func (r *rwBatchRace) requireNothingLeft() {
	t := r.t
	require.Eventually(t, func() bool {
		return len(r.victim.table.holdsOf(everyHold)) == 0 && r.victim.wd.Len() == 0
	}, fast, 5*time.Millisecond, "the cancelled read's client kept a hold or a renewal")
	requireOnlyFence(t, admin(t, r.srv), r.name)
}

// Issue 24 property 7, made deterministic: the write's release grants the
// cancelled read and the other read in one batch while the cancelled
// read's client hears nothing (a proxy holds every reply to it back); its
// ctx is cancelled then, so its call returns ErrNotObtained. Its grant is
// passed on, and once the other read is released the write behind gets
// in. "leave": its leave, whose script the server has cached (a cancelled
// wait before ran it), passes the grant on while the replies are still
// held. "handback": on a server that has not run the leave's script yet,
// the leave's EVALSHA gets NOSCRIPT, held back too, so it gives up at its
// bound (undoTimeout) with nothing run; the grant message that reaches the
// client once the replies flow, for a waiter that has gone, is handed back
// by a release. "handback-shared": the same, with the other read on the
// cancelled read's client too, so that one message carries both grants:
// the live read takes its own, the gone one's is handed back.
func TestRWCancelledReaderGrantedInABatchPassesItsGrantOn(t *testing.T) {
	for _, variant := range []string{"leave", "handback", "handback-shared"} {
		t.Run(variant, func(t *testing.T) {
			handback := variant != "leave"
			ctx, r, px := proxiedRWBatchRace(t, "cancelbatch")
			if variant == "handback-shared" {
				r.reader = r.victim.RWLock(r.name)
			}
			if !handback {
				r.cacheLeave(ctx)
			}
			vctx, cancel := context.WithCancel(ctx)
			defer cancel()
			w, cancelled, read, last := r.queue(ctx, vctx, false)

			px.HoldReplies()
			require.NoError(t, w.Unlock(ctx))
			r.requireReaders(ctx, 2, "the batch was not granted")
			cancel()
			select {
			case got := <-cancelled:
				require.ErrorIs(t, got.err, ErrNotObtained)
				require.ErrorIs(t, got.err, context.Canceled)
			case <-time.After(fast):
				t.Fatal("the cancelled read did not return")
			}
			if handback {
				time.Sleep(undoTimeout + 100*time.Millisecond)
				r.requireReaders(ctx, 2, "the leave ran although no reply came")
			} else {
				r.requireReaders(ctx, 1, "the leave did not pass the grant on")
			}
			px.ReleaseReplies()
			r.requireReaders(ctx, 1, "the cancelled read's grant was not passed on")
			r.finish(ctx, read, last)
		})
	}
}

// cacheLeave has the server run the leave script once: a read of the
// cancelled read's client that stops waiting behind a write.
func (r *rwBatchRace) cacheLeave(ctx context.Context) {
	w, err := r.writer.Lock(ctx)
	require.NoError(r.t, err)
	_, err = r.victim.RWLock(r.name).RLock(ctx, WaitAtMost(50*time.Millisecond))
	require.ErrorIs(r.t, err, ErrNotObtained)
	waitForRWQueued(r.t, r.srv, r.name, 0)
	require.NoError(r.t, w.Unlock(ctx))
}

// requireReaders waits until n reads hold the lock.
func (r *rwBatchRace) requireReaders(ctx context.Context, n int, msg string) {
	require.Eventually(r.t, func() bool {
		st, err := r.writer.Inspect(ctx)
		return err == nil && len(st.Readers) == n
	}, fast, 2*time.Millisecond, msg)
}

// Issue 24 property 7, raced: the cancel of the first queued call (a read
// granted in a batch, or, every other round, a write granted alone) lands
// at random around the write's release that grants it, or, on some
// rounds, right as its grant is being turned into a handle (the
// beforeJoin hook). Whichever wins, nothing is left: a call that got its
// hold releases it, one that did not leaves no queue entry and no hold,
// and the write queued last gets in as soon as the other read is gone.
func TestRWCancelRacingABatchGrantLeavesNothing(t *testing.T) {
	ctx, srv := serve(t)
	victim := newClient(t, srv, WithWatchdogLease(longLease))
	r := newRWBatchRace(t, srv, "cancelrace", victim)
	// The cancelled call's outcomes (not obtained, obtained), cancelled
	// by time (way 0) or at its join (way 1).
	var outcomes [2][2]int
	for round := range 30 {
		vctx, cancel := context.WithCancel(ctx)
		way := 0
		victim.SetBeforeJoin(nil)
		if round%3 == 0 {
			way = 1
			victim.SetBeforeJoin(cancel) // before the call starts: its goroutine reads it
		}
		w, cancelled, read, last := r.queue(ctx, vctx, round%2 == 1)
		if way == 0 {
			time.AfterFunc(rand.N(2*time.Millisecond), cancel)
		}
		require.NoError(t, w.Unlock(ctx))
		var got acquired
		select {
		case got = <-cancelled:
		case <-time.After(fast):
			t.Fatal("the cancelled call did not return")
		}
		if got.err == nil {
			outcomes[way][1]++
			require.NoError(t, got.lock.Unlock(ctx))
		} else {
			outcomes[way][0]++
			require.ErrorIs(t, got.err, ErrNotObtained)
		}
		cancel()
		r.finish(ctx, read, last)
	}
	t.Logf("the cancelled call, cancelled by time: %d not obtained, %d obtained; at its join: %d, %d",
		outcomes[0][0], outcomes[0][1], outcomes[1][0], outcomes[1][1])
}

// Issue 24 property 7 with a given owner: two reads of one owner
// (WithOwner) wait on one client, and one write's release grants both in
// one batch, the later joining the hold the earlier began (count 2). One
// of them is cancelled before its client hears of the grant (a proxy
// holds the replies back; the leave's script is cached, so the leave runs
// meanwhile). Its count, and only its count, goes: the other read holds
// its count on (and the write queued behind waits) until it unlocks, and
// then nothing of the owner is left and the write gets in at once, not
// after the read's lease. "first": the cancelled read queued first;
// "second": queued second. (The hold named only the last waiter granted:
// "first" kept its count for a lease, "second" lost the other's too.)
func TestRWCancelledSharedOwnerReadLeavesOnlyItsCount(t *testing.T) {
	for _, victimFirst := range []bool{true, false} {
		t.Run(map[bool]string{true: "first", false: "second"}[victimFirst], func(t *testing.T) {
			ctx, r, px := proxiedRWBatchRace(t, "sharedcancel")
			victim, srv := r.victim, r.srv
			r.cacheLeave(ctx)
			w, err := r.writer.Lock(ctx)
			require.NoError(t, err)
			owned := WithOwner(ctx, "given-reader")
			vctx, cancel := context.WithCancel(owned)
			defer cancel()
			var cancelled, kept <-chan acquired
			for _, victimNow := range []bool{victimFirst, !victimFirst} {
				if victimNow {
					cancelled = rlockInBackground(vctx, victim.RWLock(r.name), false)
				} else {
					kept = rlockInBackground(owned, victim.RWLock(r.name), false)
				}
				time.Sleep(50 * time.Millisecond) // queued in this order
			}
			waitForRWQueued(t, srv, r.name, 2)
			last := rlockInBackground(ctx, r.last, true)
			waitForRWQueued(t, srv, r.name, 3)

			px.HoldReplies()
			require.NoError(t, w.Unlock(ctx))
			require.Eventually(t, func() bool {
				st, err := r.writer.Inspect(ctx)
				return err == nil && st.Readers["given-reader"] == 2
			}, fast, 2*time.Millisecond, "the batch was not granted")
			cancel()
			select {
			case got := <-cancelled:
				require.ErrorIs(t, got.err, ErrNotObtained)
			case <-time.After(fast):
				t.Fatal("the cancelled read did not return")
			}
			px.ReleaseReplies()
			l := receive(t, kept)
			require.Eventually(t, func() bool {
				st, err := r.writer.Inspect(ctx)
				return err == nil && st.Readers["given-reader"] == 1
			}, fast, 2*time.Millisecond, "the cancelled read's count was not given back")
			// Whatever clean-up of the cancelled read is still under way
			// ends within undoTimeout; the kept read's count stays.
			for until := time.Now().Add(undoTimeout); time.Now().Before(until); time.Sleep(20 * time.Millisecond) {
				st, err := r.writer.Inspect(ctx)
				require.NoError(t, err)
				require.Equal(t, map[string]int64{"given-reader": 1}, st.Readers, "the kept read's count")
				require.Empty(t, st.Writer, "a write got in beside the kept read")
			}
			require.NoError(t, l.Unlock(ctx))
			require.NoError(t, receive(t, last).Unlock(ctx))
			r.requireNothingLeft()
		})
	}
}
