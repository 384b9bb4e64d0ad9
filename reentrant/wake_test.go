package reentrant

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// unqueued is w looking as Waiter.Unqueued.
func unqueued(w Waiter) Waiter {
	w.Unqueued = true
	return w
}

// nextMessage is the next message on sub, or "" after 300 ms.
func nextMessage(t *testing.T, sub *redis.PubSub) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	m, err := sub.ReceiveMessage(ctx)
	if err != nil {
		return ""
	}
	return m.Payload
}

// An unqueued look that finds the lock held leaves a wake record, not a
// queue place: a give-back (Release) frees the lock and wakes nobody; a
// hold's release (ReleaseWaking) that frees it wakes the record's waiter,
// once ("<id> wake", no grant), and takes the record out.
func TestWakeRecordWokenOnceByReleaseWaking(t *testing.T) {
	ctx, rdb, l := setup(t, "wake")
	sub, w := live(t, rdb, l, "w")
	for _, release := range []func(owner string, token uint64) error{
		func(owner string, token uint64) error { _, err := l.Release(ctx, rdb, owner, token, "r1"); return err },
		func(owner string, token uint64) error {
			_, err := l.ReleaseWaking(ctx, rdb, owner, token, "r2")
			return err
		},
	} {
		h, err := l.AcquireNew(ctx, rdb, "H", testLease, Waiter{})
		require.NoError(t, err)
		res, err := l.AcquireNew(ctx, rdb, "W", testLease, unqueued(w))
		require.NoError(t, err)
		require.False(t, res.Acquired)
		require.Zero(t, rdb.Exists(ctx, l.Queue).Val(), "an unqueued look queued")
		require.EqualValues(t, 1, rdb.ZCard(ctx, l.Wake).Val(), "no wake record")
		require.NoError(t, release("H", h.Token))
		require.Zero(t, rdb.Exists(ctx, l.Hash).Val(), "the lock was granted from a wake record")
	}
	// The give-back left the record and sent nothing; the release took it
	// and woke w, once.
	require.Equal(t, "w wake", nextMessage(t, sub))
	require.Empty(t, nextMessage(t, sub))
	require.Zero(t, rdb.Exists(ctx, l.Wake).Val(), "the record outlived its wake-up")
}

// A wake record goes with its waiter: its leave takes it out, a look that
// takes the lock takes it out, and it expires by itself a liveness TTL
// (here the lease) after the look that left it, the key with it.
func TestWakeRecordLeavesNothingBehind(t *testing.T) {
	ctx, rdb, l := setup(t, "wake-gone")
	_, w := live(t, rdb, l, "w")
	h, err := l.AcquireNew(ctx, rdb, "H", testLease, Waiter{})
	require.NoError(t, err)
	look := func(lease time.Duration) AcquireResult {
		res, err := l.AcquireNew(ctx, rdb, "W", lease, unqueued(w))
		require.NoError(t, err)
		return res
	}
	require.False(t, look(testLease).Acquired)
	_, err = l.Leave(ctx, rdb, w, "W", testLease, true)
	require.NoError(t, err)
	require.Zero(t, rdb.Exists(ctx, l.Wake).Val(), "the leave left the record")

	require.False(t, look(testLease).Acquired)
	pttl := rdb.PTTL(ctx, l.Wake).Val()
	require.True(t, pttl > 0 && pttl <= testLease, "the records' key lasts %v", pttl)
	_, err = l.Release(ctx, rdb, "H", h.Token, "r1")
	require.NoError(t, err)
	require.True(t, look(testLease).Acquired)
	require.Zero(t, rdb.Exists(ctx, l.Wake).Val(), "a look that holds left its record")
	_, err = l.Release(ctx, rdb, "W", currentToken(t, rdb, l), "r2")
	require.NoError(t, err)

	h, err = l.AcquireNew(ctx, rdb, "H", testLease, Waiter{})
	require.NoError(t, err)
	require.False(t, look(200*time.Millisecond).Acquired)
	require.Eventually(t, func() bool { return rdb.Exists(ctx, l.Wake).Val() == 0 },
		2*time.Second, 20*time.Millisecond, "the record did not expire")
	_, err = l.ReleaseWaking(ctx, rdb, "H", h.Token, "r3")
	require.NoError(t, err)
}

// A release wakes the oldest live record: a waiter that no longer listens
// is skipped (and its record dropped).
func TestWakeRecordSkipsTheGone(t *testing.T) {
	ctx, rdb, l := setup(t, "wake-dead")
	sub, w := live(t, rdb, l, "w")
	h, err := l.AcquireNew(ctx, rdb, "H", testLease, Waiter{})
	require.NoError(t, err)
	gone := l.Waiter("gone", "c-gone")
	_, err = l.AcquireNew(ctx, rdb, "G", testLease, unqueued(gone))
	require.NoError(t, err)
	_, err = l.AcquireNew(ctx, rdb, "W", testLease, unqueued(w))
	require.NoError(t, err)
	_, err = l.ReleaseWaking(ctx, rdb, "H", h.Token, "r1")
	require.NoError(t, err)
	require.Equal(t, "w wake", nextMessage(t, sub))
	require.Zero(t, rdb.Exists(ctx, l.Wake).Val())
}

// A waiter woken whose call ends before it looks passes the wake-up on in
// its leave, while the lock is free: the record it had is gone, so its
// leave wakes the next.
func TestWakeRecordLeavePassesItOn(t *testing.T) {
	ctx, rdb, l := setup(t, "wake-pass")
	sub1, w1 := live(t, rdb, l, "w1")
	sub2, w2 := live(t, rdb, l, "w2")
	h, err := l.AcquireNew(ctx, rdb, "H", testLease, Waiter{})
	require.NoError(t, err)
	for _, w := range []Waiter{w1, w2} {
		_, err = l.AcquireNew(ctx, rdb, "O-"+w.ID, testLease, unqueued(w))
		require.NoError(t, err)
	}
	_, err = l.ReleaseWaking(ctx, rdb, "H", h.Token, "r1")
	require.NoError(t, err)
	require.Equal(t, "w1 wake", nextMessage(t, sub1), "the oldest record is woken")
	_, err = l.Leave(ctx, rdb, w1, "O-w1", testLease, true)
	require.NoError(t, err)
	require.Equal(t, "w2 wake", nextMessage(t, sub2))
	require.Zero(t, rdb.Exists(ctx, l.Wake).Val())
}

// A queued look of a waiter that may have a wake record (Waiter.Wakes)
// takes it out: a quorum waiter whose node waited on moved past this one
// queues here after leaving a record, and may end holding the lock here,
// where its leave does not go.
func TestWakeRecordTakenOutByAQueuedLook(t *testing.T) {
	ctx, rdb, l := setup(t, "wake-queued")
	_, w := live(t, rdb, l, "w")
	h, err := l.AcquireNew(ctx, rdb, "H", testLease, Waiter{})
	require.NoError(t, err)
	_, err = l.AcquireNew(ctx, rdb, "W", testLease, unqueued(w))
	require.NoError(t, err)
	queued := w
	queued.Wakes = true
	res, err := l.AcquireNew(ctx, rdb, "W", testLease, queued)
	require.NoError(t, err)
	require.False(t, res.Acquired)
	require.Zero(t, rdb.Exists(ctx, l.Wake).Val(), "a queued look left the record")
	require.Equal(t, []string{"w"}, queuedIDs(t, ctx, rdb, l))
	_, err = l.Release(ctx, rdb, "H", h.Token, "r1")
	require.NoError(t, err)
	res, err = l.AcquireNew(ctx, rdb, "W", testLease, queued)
	require.NoError(t, err)
	require.True(t, res.Acquired)
	require.Zero(t, rdb.Exists(ctx, l.Wake).Val())
}

// A force release in quorum mode (ForceReleaseWaking) that frees the lock
// wakes the oldest wake record's waiter, as a hold's release does; a
// plain ForceRelease wakes nobody and leaves the record.
func TestWakeRecordWokenByForceReleaseWaking(t *testing.T) {
	ctx, rdb, l := setup(t, "wake-force")
	sub, w := live(t, rdb, l, "w")
	for _, force := range []func(hold uint64) (uint64, error){
		func(uint64) (uint64, error) { return l.ForceRelease(ctx, rdb, "f1") },
		func(hold uint64) (uint64, error) { return l.ForceReleaseWaking(ctx, rdb, hold, "f2") },
	} {
		h, err := l.AcquireNew(ctx, rdb, "H", testLease, Waiter{})
		require.NoError(t, err)
		_, err = l.AcquireNew(ctx, rdb, "W", testLease, unqueued(w))
		require.NoError(t, err)
		deleted, err := force(h.Token)
		require.NoError(t, err)
		require.Equal(t, h.Token, deleted)
		require.Zero(t, rdb.Exists(ctx, l.Hash).Val(), "the lock was granted from a wake record")
	}
	require.Equal(t, "w wake", nextMessage(t, sub), "the waking force release woke the record")
	require.Empty(t, nextMessage(t, sub))
	require.Zero(t, rdb.Exists(ctx, l.Wake).Val(), "the record outlived its wake-up")
}

// A quorum force release names the hold it deletes (ForceReleaseWaking's
// hold): one that runs once another hold has replaced it deletes nothing,
// however late (its copy held on the network past its caller's return),
// and a resend of it replays that.
func TestForceReleaseWakingSparesTheNextHold(t *testing.T) {
	ctx, rdb, l := setup(t, "force-named")
	h1, err := l.AcquireNew(ctx, rdb, "H1", testLease, Waiter{})
	require.NoError(t, err)
	rel, err := l.Release(ctx, rdb, "H1", h1.Token, "r1")
	require.NoError(t, err)
	require.Equal(t, Released, rel.Status)
	h2, err := l.AcquireNew(ctx, rdb, "H2", testLease, Waiter{})
	require.NoError(t, err)
	require.NotEqual(t, h1.Token, h2.Token)
	for range 2 { // the second is a resend: it replays
		deleted, err := l.ForceReleaseWaking(ctx, rdb, h1.Token, "late")
		require.NoError(t, err)
		require.Zero(t, deleted, "a force release of H1 deleted H2")
	}
	st, err := l.Inspect(ctx, rdb)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"H2": 1}, st.Holders)
	deleted, err := l.ForceReleaseWaking(ctx, rdb, h2.Token, "now")
	require.NoError(t, err)
	require.Equal(t, h2.Token, deleted)
	require.Zero(t, rdb.Exists(ctx, l.Hash).Val())
}
