package rlock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// A set's grants are acknowledged by replicas as a single lock's are:
// one WAIT after each set script (one per slot master), and a set whose
// acknowledgement fails is not obtained and holds nothing.
func TestLockSetReplicaAcks(t *testing.T) {
	ctx, srv := serve(t)
	redistest.StartReplica(t, srv)
	c := newClient(t, srv, WithReplicaAcks(1, steadyLease))
	rdb := admin(t, srv)
	names := []string{"ack-a", "ack-b", "ack-c", "ack-d"}
	before := serverStats(t, rdb)
	s, err := c.LockAll(ctx, names)
	require.NoError(t, err)
	after := serverStats(t, rdb)
	require.EqualValues(t, 1, after[0]["wait"]-before[0]["wait"], "one acknowledgement for the set's script")
	require.NoError(t, s.Unlock(ctx))

	lagging := redistest.Start(t)
	withStoppedReplica(t, lagging)
	c = newClient(t, lagging, WithReplicaAcks(1, 200*time.Millisecond))
	_, err = c.LockAll(ctx, names)
	require.ErrorIs(t, err, ErrNotObtained)
	require.ErrorIs(t, err, ErrNotReplicated)
	requireNothingLeft(ctx, t, c, admin(t, lagging), names...)
}
