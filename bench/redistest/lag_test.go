package redistest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

type lagging struct {
	master, replica *Server
	relay           *ReplicationRelay
}

// startLagging starts a master and a lagging replica, and writes "before",
// which the unheld stream brings to the replica, which acknowledges it.
func startLagging(t *testing.T) (context.Context, lagging) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	l := lagging{master: Start(t)}
	l.replica, l.relay = StartLaggingReplica(t, l.master)
	m := l.master.Admin()
	require.NoError(t, m.Set(ctx, "before", 1, 0).Err())
	require.EqualValues(t, 1, m.Wait(ctx, 1, 5*time.Second).Val(), "an unheld stream is acknowledged")
	return ctx, l
}

// While the relay holds, the replica receives nothing, so it acknowledges
// nothing and WAIT does not count it; Release delivers what was held, in
// order, and WAIT counts it again.
func TestReplicationRelayHoldsAndReleases(t *testing.T) {
	ctx, l := startLagging(t)
	r, m, rep := l.relay, l.master.Admin(), l.replica.Admin()

	r.Hold()
	require.NoError(t, m.Set(ctx, "held", 1, 0).Err())
	require.EqualValues(t, 0, m.Wait(ctx, 1, 100*time.Millisecond).Val(), "a held write is not acknowledged")
	require.Positive(t, r.Held())
	require.ErrorIs(t, rep.Get(ctx, "held").Err(), redis.Nil)
	info := m.Info(ctx, "replication").Val()
	require.Contains(t, info, "slave0:ip=127.0.0.1,port="+strconv.Itoa(l.replica.Port), "the master names the replica, not the relay")

	r.Release()
	require.EqualValues(t, 1, m.Wait(ctx, 1, 5*time.Second).Val(), "released writes are acknowledged")
	require.Equal(t, "1", rep.Get(ctx, "held").Val())
	require.Zero(t, r.Held())
}

// PassOn(GetAck) lets one WAIT's acknowledgement through: the writes up to
// that WAIT's GETACK reach the replica, which acknowledges them, and a
// write after it stays held.
func TestReplicationRelayPassesOnOneGetAck(t *testing.T) {
	ctx, l := startLagging(t)
	r, m, rep := l.relay, l.master.Admin(), l.replica.Admin()
	r.Hold()
	passed := r.PassOn(GetAck)
	require.NoError(t, m.Set(ctx, "acked", 1, 0).Err())
	require.EqualValues(t, 1, m.Wait(ctx, 1, 5*time.Second).Val(), "the write before the GETACK is acknowledged")
	select {
	case <-passed:
	case <-time.After(5 * time.Second):
		t.Fatal("PassOn never passed")
	}
	require.Equal(t, "1", rep.Get(ctx, "acked").Val())
	require.NoError(t, m.Set(ctx, "after", 1, 0).Err())
	require.EqualValues(t, 0, m.Wait(ctx, 1, 100*time.Millisecond).Val(), "a write after it is held")
	require.ErrorIs(t, rep.Get(ctx, "after").Err(), redis.Nil)
}

// Drop after the master's death loses what the relay held: the replica,
// promoted, lacks the held write. This is the lag a failover can lose.
func TestReplicationRelayDropLosesWhatItHeld(t *testing.T) {
	ctx, l := startLagging(t)
	r, m, rep := l.relay, l.master.Admin(), l.replica.Admin()
	r.Hold()
	require.NoError(t, m.Set(ctx, "held", 1, 0).Err())
	l.master.Stop()
	r.Drop()
	require.NoError(t, rep.ReplicaOf(ctx, "NO", "ONE").Err())
	require.Equal(t, "1", rep.Get(ctx, "before").Val())
	require.ErrorIs(t, rep.Get(ctx, "held").Err(), redis.Nil, "the held write is lost")
}

// The sentinel knows the lagging replica at its own address and promotes
// it after the master's SIGKILL; what the relay held is lost.
func TestSentinelPromotesALaggingReplica(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := StartSentinel(t, WithLaggingReplica())
	addr, err := s.MasterAddr(ctx)
	require.NoError(t, err)
	require.Equal(t, s.Relay.Addr, addr, "the sentinel monitors the master at the relay")
	rdb := s.FailoverClient()
	require.NoError(t, rdb.Set(ctx, "baton:{x}", "acknowledged", 0).Err())
	require.EqualValues(t, 1, s.Master.Admin().Wait(ctx, 1, 5*time.Second).Val())
	s.Relay.Hold()
	require.NoError(t, rdb.Set(ctx, "baton:{x}", "held", 0).Err())

	start := time.Now()
	old := s.Master
	old.Stop()
	s.Relay.Drop()
	s.Failover()
	t.Logf("failover after SIGKILL took %v", time.Since(start))
	require.NotSame(t, old, s.Master)
	require.False(t, s.Replica.Running())
	require.Eventually(t, func() bool { return rdb.Get(ctx, "baton:{x}").Val() == "acknowledged" },
		10*time.Second, 20*time.Millisecond, "the failover client reads the promoted replica, which lacks the held write")
}
