package rlock

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// A hand-off grant whose acknowledgement fails because Redis stops
// answering (a failover's outage), not for want of replicas: the call
// returns after leaveWait with ErrNotObtained while the give-back and the
// wait's leave go on in the background (where the give-back once took a
// new owner for the call, while the leave read it: a data race that
// TestFailoversUnderLoadWithAcks's children showed under -race). Once
// Redis answers again, the grant is given back: the lock is free.
func TestReplicaAcksGiveBackDuringAnOutage(t *testing.T) {
	ctx, srv := serve(t)
	holder := newClient(t, srv, WithReplicaAcks(0, 0))
	l, err := holder.Lock(ctx, "outage")
	require.NoError(t, err)

	px := startProxy(t, srv.Addr)
	read := 500 * time.Millisecond // above leaveWait: a give-back that finds no answer outlasts the call
	c, err := New(px.client(t, func(o *redis.Options) { o.ReadTimeout, o.MaxRetries = read, 0 }),
		WithReplicaAcks(1, 100*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	res := lockInBackground(ctx, c, "outage")
	waitForQueued(t, srv, "outage", 1)

	release := px.HoldNextReply(func(cmd []string) bool { return cmd[0] == "wait" })
	require.NoError(t, l.Unlock(ctx)) // hands the lock to the waiter, whose WAIT's reply is held
	require.Eventually(t, func() bool {
		px.mu.Lock()
		defer px.mu.Unlock()
		return px.rule == nil
	}, fast, time.Millisecond, "the waiter's WAIT")
	px.Blackhole()
	release()
	got := withinBy(t, res, time.Now().Add(10*time.Second), "the waiter's Lock did not return")
	require.Nil(t, got.lock)
	require.ErrorIs(t, got.err, ErrNotObtained)

	px.Restore()
	again, err := holder.Lock(ctx, "outage")
	require.NoError(t, err, "the grant was given back")
	require.NoError(t, again.Unlock(ctx))
}
