package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/bench/redistest/redisproc"
)

// SentinelMaster is the master name the test sentinel monitors.
const SentinelMaster = "baton-test"

// Sentinel is a Sentinel deployment for tests: one master, one replica of
// it, and one sentinel that monitors them, all on loopback, all stopped when
// the test ends.
type Sentinel struct {
	// Master and Replica are the data servers as started; after Failover
	// their roles are swapped.
	Master, Replica *Server
	// Addr is the sentinel's address.
	Addr string
	// Relay carries the replication link of a replica started
	// WithLaggingReplica, and every other connection to the first master:
	// the sentinel names Relay.Addr as that master. It is nil otherwise.
	Relay *ReplicationRelay

	// relays are, WithRelays, the relay in front of each data server,
	// through which everyone reaches it (see RelayOf); nil otherwise.
	relays map[*Server]*ReplicationRelay

	tb    testing.TB
	proc  *redisproc.Server
	admin *redis.Client // of the sentinel itself
}

// SentinelOption changes the deployment StartSentinel makes.
type SentinelOption func(*sentinelSetup)

type sentinelSetup struct {
	lagging   bool
	relayed   bool          // WithRelays
	downAfter time.Duration // of the sentinel's down-after-milliseconds
}

// WithLaggingReplica starts the replica with StartLaggingReplica, so a test
// can hold what the master sends it (Sentinel.Relay), and has the sentinel
// judge the master down after 500ms of silence. The sentinel monitors the
// master at the relay's address, the one the replica follows: a sentinel
// that saw the replica follow another address than its master's would point
// it at the master, around the relay (+fix-slave-config).
func WithLaggingReplica() SentinelOption {
	return func(s *sentinelSetup) { s.lagging, s.downAfter = true, 500*time.Millisecond }
}

// StartSentinel starts a master, a replica that has synced with it, and a
// sentinel that knows both.
func StartSentinel(tb testing.TB, opts ...SentinelOption) *Sentinel {
	tb.Helper()
	setup := sentinelSetup{downAfter: time.Second}
	for _, o := range opts {
		o(&setup)
	}
	master := Start(tb)
	s := &Sentinel{Master: master, tb: tb}
	monitored := master.Port
	switch {
	case setup.relayed:
		monitored = s.startRelayed()
	case setup.lagging:
		s.Replica, s.Relay = StartLaggingReplica(tb, master)
		monitored = s.Relay.Port
	default:
		s.Replica = StartReplica(tb, master)
	}

	dir := tb.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	monitor := fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 1\n"+
		"sentinel down-after-milliseconds %[1]s %d\n"+
		"sentinel failover-timeout %[1]s 5000\n", SentinelMaster, monitored, setup.downAfter.Milliseconds())
	if err := os.WriteFile(conf, []byte(monitor), 0o600); err != nil {
		tb.Fatal(err)
	}
	proc, err := redisproc.Start(redisproc.Config{Bin: Binary(tb), Dir: dir, ConfFile: conf, Args: []string{"--sentinel"}})
	if err != nil {
		tb.Fatalf("redistest: sentinel: %v", err)
	}
	tb.Cleanup(proc.Stop)
	s.Addr, s.proc = proc.Addr, proc
	s.admin = redis.NewClient(&redis.Options{Addr: s.Addr})
	tb.Cleanup(func() { _ = s.admin.Close() })
	if setup.relayed {
		s.quicken()
	}
	s.awaitPromotable()
	return s
}

// awaitPromotable waits until the sentinel has talked to the replica itself
// and found it linked to its master: before that a failover has no replica
// it may promote.
func (s *Sentinel) awaitPromotable() {
	s.tb.Helper()
	await(s.tb, func(ctx context.Context) bool {
		replicas, err := s.admin.Do(ctx, "SENTINEL", "REPLICAS", SentinelMaster).Slice()
		if err != nil || len(replicas) != 1 {
			return false
		}
		state := map[string]any{}
		switch r := replicas[0].(type) {
		case map[any]any: // RESP3
			for k, v := range r {
				state[fmt.Sprint(k)] = v
			}
		case []any: // RESP2: field, value, ...
			for i := 0; i+1 < len(r); i += 2 {
				state[fmt.Sprint(r[i])] = r[i+1]
			}
		}
		return state["flags"] == "slave" && state["master-link-status"] == "ok"
	}, "the sentinel may promote the replica")
}

// FailoverClient returns a redis.NewFailoverClient on the sentinel, closed
// at test end. Under ACLEnv=1 it logs in as the least-privilege user.
func (s *Sentinel) FailoverClient() *redis.Client {
	rdb := redis.NewFailoverClient(s.failoverOptions(nil))
	s.tb.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// FailoverClusterClient returns a redis.NewFailoverClusterClient on the
// sentinel: a ClusterClient whose one slot range is served by the master
// and its replica, as the sentinel names them. opts may adjust the options
// (ReplicaOnly, say). It is closed at test end; under ACLEnv=1 it logs in
// as the least-privilege user.
func (s *Sentinel) FailoverClusterClient(opts ...func(*redis.FailoverOptions)) *redis.ClusterClient {
	rdb := redis.NewFailoverClusterClient(s.failoverOptions(opts))
	s.tb.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func (s *Sentinel) failoverOptions(opts []func(*redis.FailoverOptions)) *redis.FailoverOptions {
	o := Options("")
	fo := &redis.FailoverOptions{
		MasterName:    SentinelMaster,
		SentinelAddrs: []string{s.Addr},
		Username:      o.Username,
		Password:      o.Password,
	}
	for _, f := range opts {
		f(fo)
	}
	return fo
}

// MasterAddr is the master's address as the sentinel names it.
func (s *Sentinel) MasterAddr(ctx context.Context) (string, error) {
	addr, err := s.admin.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SentinelMaster).StringSlice()
	if err != nil || len(addr) != 2 {
		return "", fmt.Errorf("redistest: sentinel master address: %v %w", addr, err)
	}
	return addr[0] + ":" + addr[1], nil
}

// Failover makes the sentinel promote the replica, and returns once the
// sentinel names it as the master, it has taken the role, and the old
// master, if it still runs, has become its replica (so no write can land
// there any more); Master and Replica are swapped. After the old master's
// Stop (a SIGKILL), the failover the sentinel may have begun by itself
// counts as the one asked for.
func (s *Sentinel) Failover() {
	s.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := s.admin.Do(ctx, "SENTINEL", "FAILOVER", SentinelMaster).Err()
	if err != nil && !(strings.HasPrefix(err.Error(), "INPROG") && !s.Master.Running()) {
		s.tb.Fatalf("redistest: SENTINEL FAILOVER: %v", err)
	}
	promoted := s.Replica
	await(s.tb, func(ctx context.Context) bool {
		addr, err := s.MasterAddr(ctx)
		if err != nil || addr != s.named(promoted) {
			return false
		}
		role, err := promoted.Admin().Do(ctx, "ROLE").Slice()
		return err == nil && len(role) > 0 && role[0] == "master"
	}, "the replica is promoted")
	s.Master, s.Replica = promoted, s.Master
	if s.Replica.Running() {
		s.follow(ctx, s.Replica)
	}
}

// named is the address the sentinel knows srv by: its relay's WithRelays,
// its own otherwise.
func (s *Sentinel) named(srv *Server) string {
	if r := s.relays[srv]; r != nil {
		return r.Addr
	}
	return srv.Addr
}

// follow makes demoted, the old master, a replica of the new one. The
// sentinel converts an old master when its next INFO shows it still a
// master, up to 10s later; the harness does it at once.
func (s *Sentinel) follow(ctx context.Context, demoted *Server) {
	s.tb.Helper()
	_, port, _ := net.SplitHostPort(s.named(s.Master))
	if err := demoted.Admin().ReplicaOf(ctx, "127.0.0.1", port).Err(); err != nil {
		s.tb.Fatalf("redistest: REPLICAOF on the old master: %v", err)
	}
	await(s.tb, func(ctx context.Context) bool {
		role, err := demoted.Admin().Do(ctx, "ROLE").Slice()
		return err == nil && len(role) > 0 && role[0] == "slave"
	}, "the old master follows the new one")
}

// StartReplica starts a replica of master and returns once it has synced
// with it: what master held before the call is on the replica too.
func StartReplica(tb testing.TB, master *Server) *Server {
	tb.Helper()
	return startReplica(tb, master, master.Port)
}

// await polls cond for up to 10 seconds, or fails tb with what.
func await(tb testing.TB, cond func(context.Context) bool, what string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for !cond(ctx) {
		select {
		case <-ctx.Done():
			tb.Fatalf("redistest: timed out waiting until %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
