package redistest

import (
	"context"
	"strconv"
	"time"
)

// WithRelays puts each data server behind a ReplicationRelay of its own,
// through which everyone reaches it: clients, the sentinel, and the
// replica's replication link, which the relay in front of the master can
// hold (RelayOf(Master).Hold). Each server announces its relay's port, so
// the sentinel knows every server by its relay across failovers, and
// never points a replica around one (+fix-slave-config). The sentinel
// judges a master down after 500ms and reads its replicas every 200ms,
// so that KillMaster after KillMaster takes a second or two each.
func WithRelays() SentinelOption {
	return func(s *sentinelSetup) { s.relayed, s.downAfter = true, 500*time.Millisecond }
}

// sentinelPeriods are SENTINEL DEBUG settings that make a sentinel see a
// restarted replica, and promote it, within a fraction of a second rather
// than 10-15s: how often it reads a server's INFO and may reconnect to
// it, and how long a TILT (a sentinel starved of CPU, which a loaded test
// machine can cause) stops it from acting.
var sentinelPeriods = []any{"info-period", 200, "min-link-reconnect-period", 200, "tilt-period", 1000}

// startRelayed starts the replica and a relay in front of each server,
// makes the replica follow the master through the master's relay, and
// returns the port the sentinel must monitor: the master's relay's.
func (s *Sentinel) startRelayed() (monitored int) {
	s.tb.Helper()
	s.Replica = Start(s.tb)
	s.relays = map[*Server]*ReplicationRelay{}
	for _, srv := range []*Server{s.Master, s.Replica} {
		s.relays[srv] = StartReplicationRelay(s.tb, srv)
	}
	syncAtOnce(s.tb, s.Master)
	s.restartAsReplica(s.Replica)
	return s.relays[s.Master].Port
}

// quicken applies sentinelPeriods to the sentinel.
func (s *Sentinel) quicken() {
	s.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.admin.Do(ctx, append([]any{"SENTINEL", "DEBUG"}, sentinelPeriods...)...).Err(); err != nil {
		s.tb.Fatalf("redistest: SENTINEL DEBUG: %v", err)
	}
}

// RelayOf is the relay in front of srv, WithRelays; nil otherwise.
func (s *Sentinel) RelayOf(srv *Server) *ReplicationRelay { return s.relays[srv] }

// KillMaster SIGKILLs the master of a deployment started WithRelays, and
// its relay drops what it held of the replica's stream: that is lost with
// the master. The sentinel is asked to fail over at once (as it would
// after down-after-milliseconds). KillMaster returns once the replica is
// promoted and the killed server runs again, empty, as a replica of the
// new master, linked and known to the sentinel, so that the next
// KillMaster can fail over to it; Master and Replica are swapped. It
// reports how long the promotion took from the kill.
func (s *Sentinel) KillMaster() time.Duration {
	s.tb.Helper()
	if s.relays == nil {
		s.tb.Fatal("redistest: KillMaster needs a deployment started WithRelays")
	}
	killed := s.Master
	killed.Stop()
	s.relays[killed].Drop()
	began := time.Now()
	s.Failover()
	took := time.Since(began)
	s.restartAsReplica(killed)
	s.awaitPromotable()
	return took
}

// restartAsReplica restarts srv, empty, as a replica of the master through
// the master's relay, and waits until it has synced. Its replication link
// comes from replicaSourceIP, which the relay can hold, and it announces
// its own relay's port; once promoted, it syncs a replica at once, not
// after repl-diskless-sync-delay's default 5s.
func (s *Sentinel) restartAsReplica(srv *Server) {
	s.tb.Helper()
	srv.restart("--bind-source-addr", replicaSourceIP, "--repl-diskless-sync-delay", "0",
		"--replica-announce-port", strconv.Itoa(s.relays[srv].Port),
		"--replicaof", "127.0.0.1", strconv.Itoa(s.relays[s.Master].Port))
	awaitSynced(s.tb, srv)
}
