package rlock

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// withStoppedReplica starts a replica of srv and stops it (SIGSTOP): the
// master still counts it as connected, and WAIT times out.
func withStoppedReplica(t *testing.T, srv *redistest.Server) *redistest.Server {
	t.Helper()
	replica := redistest.StartReplica(t, srv)
	replica.Pause()
	t.Cleanup(replica.Resume) // before the replica's own clean-up stops it
	return replica
}

// requireNotReplicated checks that Lock failed for want of acknowledgements
// and left nothing held: no hold, no queue.
func requireNotReplicated(ctx context.Context, t *testing.T, srv *redistest.Server, name string, err error) {
	t.Helper()
	require.ErrorIs(t, err, ErrNotObtained)
	require.ErrorIs(t, err, ErrNotReplicated)
	require.Contains(t, err.Error(), "acknowledged")
	require.Zero(t, admin(t, srv).Exists(ctx, lockKey(name)).Val(), "the grant was given back")
}

// By default, a master with a replica has every grant acknowledged: with
// the replica stopped, Lock fails with ErrNotReplicated and leaves the
// lock free.
func TestReplicaAcksDefaultWaitsWhereTheMasterHasReplicas(t *testing.T) {
	ctx, srv := serve(t)
	withStoppedReplica(t, srv)
	c := newClient(t, srv)
	l, err := c.Lock(ctx, "acked")
	require.Nil(t, l)
	requireNotReplicated(ctx, t, srv, "acked", err)
}

// A master without replicas waits for none, until a replica connects: the
// client asks again (every replicaRecheck), and then sends WAIT.
func TestReplicaAcksDefaultFollowsTheReplicaCount(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	c := newClient(t, srv)
	lockUnlock := func() {
		l, err := c.Lock(ctx, "count")
		require.NoError(t, err)
		require.NoError(t, l.Unlock(ctx))
	}
	waits := func() int64 {
		s, err := redistest.ReadCommandStats(ctx, rdb)
		require.NoError(t, err)
		return s["wait"]
	}
	lockUnlock()
	require.Zero(t, waits(), "no replica: no WAIT")

	redistest.StartReplica(t, srv)
	for waits() == 0 {
		lockUnlock() // within replicaRecheck, the client sees the replica
		select {
		case <-ctx.Done():
			t.Fatal("the client never waited for the new replica")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// WithReplicaAcks rejects what it cannot mean.
func TestReplicaAcksBadInput(t *testing.T) {
	_, srv := serve(t)
	for _, o := range []Option{WithReplicaAcks(-1, time.Second), WithReplicaAcks(1, 0), WithReplicaAcks(0, -time.Second),
		WithReplicaAcks(1, srv.Client().Options().ReadTimeout)} {
		_, err := New(srv.Client(), o)
		require.ErrorIs(t, err, ErrInvalidOption)
	}
	_ = newClient(t, srv, WithReplicaAcks(0, 0))
}

// A hand-off grant is the releaser's write: the waiter returns only once a
// replica has it, and gives it back when none acknowledges it, so the
// lock does not stay with a waiter that was told it failed.
func TestReplicaAcksHandOffWaitsForTheAck(t *testing.T) {
	ctx, srv := serve(t)
	replica := redistest.StartReplica(t, srv)
	c := newClient(t, srv, WithReplicaAcks(1, time.Second))
	holder, err := c.Lock(ctx, "handoff")
	require.NoError(t, err, "acknowledged by the running replica")
	res := lockInBackground(ctx, c, "handoff")
	waitForQueued(t, srv, "handoff", 1)

	replica.Pause()
	t.Cleanup(replica.Resume)
	require.NoError(t, holder.Unlock(ctx))
	got := withinBy(t, res, time.Now().Add(10*time.Second), "the waiter's Lock did not return")
	require.Nil(t, got.lock)
	requireNotReplicated(ctx, t, srv, "handoff", got.err)
}

// A renewal counts only once acknowledged: a hold whose renewals are not
// acknowledged ends at its validity with ErrLockLost, naming replication.
func TestReplicaAcksUnacknowledgedRenewalsLoseTheHold(t *testing.T) {
	ctx, srv := serve(t)
	replica := redistest.StartReplica(t, srv)
	// The acquire's ack, from a running replica, must come within the
	// timeout on the suite's load: 300ms did not, once in a CI run, so the
	// replica first catches up (WAIT) and the timeout is the default 1s. A
	// renewal's failed ack is then recorded one tick (lease/3 = 2s) plus
	// the timeout after the grant, 3s, well before the validity passes
	// (the lease less 1%: 5.94s).
	require.EqualValues(t, 1, admin(t, srv).Wait(ctx, 1, 5*time.Second).Val(), "the replica caught up")
	c := newClient(t, srv, WithReplicaAcks(1, time.Second), WithWatchdogLease(6*time.Second))
	l, err := c.Lock(ctx, "renewed")
	require.NoError(t, err)
	replica.Pause()
	t.Cleanup(replica.Resume)

	select {
	case <-l.Context().Done():
	case <-ctx.Done():
		t.Fatal("the hold outlived its unacknowledged renewals")
	}
	cause := context.Cause(l.Context())
	require.ErrorIs(t, cause, ErrLockLost)
	require.Contains(t, cause.Error(), "replicas")
}

// A call cancelled during the acknowledgement wait returns its ctx's error
// and has given the grant back.
func TestReplicaAcksCancelDuringTheWait(t *testing.T) {
	ctx, srv := serve(t)
	withStoppedReplica(t, srv)
	c := newClient(t, srv, WithReplicaAcks(1, time.Second))
	callCtx, cancel := context.WithCancel(ctx)
	time.AfterFunc(100*time.Millisecond, cancel)
	l, err := c.Lock(callCtx, "cancelled")
	require.Nil(t, l)
	require.ErrorIs(t, err, ErrNotObtained)
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, admin(t, srv).Exists(ctx, lockKey("cancelled")).Val(), "nothing left held")
}

// A server that refuses WAIT (here, by ACL): an explicit count makes New
// fail; the default turns itself off, says so once, and locks work.
func TestReplicaAcksWaitRefused(t *testing.T) {
	ctx, srv := serve(t)
	redistest.StartReplica(t, srv)
	require.NoError(t, admin(t, srv).Do(ctx, "acl", "setuser", "nowait", "on", ">pw", "~*", "&*", "+@all", "-wait").Err())
	asNoWait := func(o *redis.Options) { o.Username, o.Password = "nowait", "pw" }

	_, err := New(srv.Client(asNoWait), WithReplicaAcks(1, time.Second))
	require.ErrorIs(t, err, ErrReplicaAcksUnsupported)

	var logs bytes.Buffer
	var mu sync.Mutex
	c, err := New(srv.Client(asNoWait), WithLogger(slog.New(slog.NewTextHandler(&syncWriter{w: &logs, mu: &mu}, nil))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	for range 3 {
		l, err := c.Lock(ctx, "nowait")
		require.NoError(t, err)
		require.NoError(t, l.Unlock(ctx))
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 1, strings.Count(logs.String(), "refuses WAIT"), logs.String())
}

// Every kind of grant waits for the acknowledgement: a grant of the RW
// lock, the semaphore or a wire-mode lock that no replica acknowledged is
// given back, so once the replica is back the whole resource is free.
func TestReplicaAcksEveryKindOfGrant(t *testing.T) {
	type take func(ctx context.Context, c *Client) (func(context.Context) error, error)
	write := func(ctx context.Context, c *Client) (func(context.Context) error, error) {
		l, err := c.RWLock("rw").Lock(ctx)
		return unlockOf(l), err
	}
	kinds := map[string]struct {
		opts  []Option
		take  take
		whole take // takes what take would have left held; take if nil
	}{
		"write": {take: write},
		"read": {whole: write, take: func(ctx context.Context, c *Client) (func(context.Context) error, error) {
			l, err := c.RWLock("rw").RLock(ctx)
			return unlockOf(l), err
		}},
		"permits": {take: func(ctx context.Context, c *Client) (func(context.Context) error, error) {
			p, err := c.Semaphore("sem", 2).Acquire(ctx, 2)
			if p == nil {
				return nil, err
			}
			return p.Release, err
		}},
		"wire": {opts: []Option{WithRedissonWire("")}, take: func(ctx context.Context, c *Client) (func(context.Context) error, error) {
			l, err := c.Lock(ctx, "wired")
			return unlockOf(l), err
		}},
	}
	for kind, k := range kinds {
		t.Run(kind, func(t *testing.T) {
			ctx, srv := serve(t)
			replica := redistest.StartReplica(t, srv)
			c := newClient(t, srv, append(k.opts, WithReplicaAcks(1, 100*time.Millisecond))...)
			replica.Pause()
			release, err := k.take(ctx, c)
			replica.Resume()
			require.Nil(t, release)
			require.ErrorIs(t, err, ErrNotObtained)
			require.ErrorIs(t, err, ErrNotReplicated)

			// The check needs no acknowledgement: a replica just resumed
			// may take longer than 100ms to give one on a loaded machine.
			c = newClient(t, srv, append(k.opts, WithReplicaAcks(0, 0))...)

			whole := k.whole
			if whole == nil {
				whole = k.take
			}
			// A hold left behind would last the watchdog lease (30s).
			wholeCtx, cancel := context.WithTimeout(ctx, DefaultWatchdogLease/3)
			defer cancel()
			release, err = whole(wholeCtx, c) // waits unless nothing was left held
			require.NoError(t, err)
			require.NoError(t, release(ctx))
		})
	}
}

// unlockOf is l's Unlock, or nil for no lock.
func unlockOf(l *Lock) func(context.Context) error {
	if l == nil {
		return nil
	}
	return l.Unlock
}

// An acquire whose reply is lost is resent by go-redis and replays: with a
// running replica the replay is acknowledged (its ack covers the first
// run's write, made on another connection) and counts once; with the
// replica stopped it is given back whole.
func TestReplicaAcksResentAcquire(t *testing.T) {
	ctx, srv := serve(t)
	replica := redistest.StartReplica(t, srv)
	// go-redis's default read timeout, and the default ack timeout below
	// it: a healthy replica's ack must not miss it on a loaded machine
	// (100ms did), and the resend comes after that read timeout.
	c, px := proxiedClient(ctx, t, srv, 3*time.Second, 2, WithReplicaAcks(1, time.Second))

	px.DropNextReply(isScript("acquire"), false)
	l, err := c.Lock(ctx, "resent")
	require.NoError(t, err)
	require.EqualValues(t, 1, px.Dropped(), "the acquire's reply was lost and resent")
	st, err := c.Inspect(ctx, "resent")
	require.NoError(t, err)
	require.Equal(t, map[string]int64{l.Owner(): 1}, st.Holders, "the resend counted once")
	require.NoError(t, l.Unlock(ctx))

	replica.Pause()
	t.Cleanup(replica.Resume)
	px.DropNextReply(isScript("acquire"), false)
	l, err = c.Lock(ctx, "resent")
	require.Nil(t, l)
	require.EqualValues(t, 2, px.Dropped())
	requireNotReplicated(ctx, t, srv, "resent", err)
}
