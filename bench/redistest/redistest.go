// Package redistest starts throwaway redis-server processes on loopback ports
// for tests. It imports nothing from baton but its own process starter,
// redisproc, so every baton package may use it from its tests without creating
// a dependency between the packages under test.
//
// A test that needs a server calls Start, and TestMain in its package calls
// RequireInstalled first. Without redis-server (or redis-cli) on PATH the
// package fails at once, naming the install command: a real-server test
// never passes by being skipped. Under go test -short every test that needs
// a server is skipped, installed or not, and only the rest run.
//
// Besides single servers it starts replicas (StartReplica), lagging replicas
// whose replication stream a ReplicationRelay can hold, release or drop
// (StartLaggingReplica: the lag a failover can lose, which SIGSTOP cannot
// make, as the kernel keeps buffering the stream), Sentinel deployments
// (StartSentinel, WithLaggingReplica; WithRelays and KillMaster for one
// failover after another, each server behind a relay) and clusters
// (StartCluster).
package redistest

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/bench/redistest/redisproc"
)

// Server is one redis-server process listening on 127.0.0.1.
type Server struct {
	// Addr is "127.0.0.1:port".
	Addr string
	// Port is the TCP port the server listens on.
	Port int

	tb   testing.TB
	proc *redisproc.Server
}

// cliBinary is the client that comes with redis-server; StartCluster runs it.
const cliBinary = "redis-cli"

// RequireInstalled is the first call of TestMain in each package whose tests
// start servers. Unless the tests run with -short, it checks that
// redis-server and redis-cli are on PATH; when one is not, it prints which,
// and how to install it, and exits with status 1, so that the package fails
// once, loudly, instead of passing with its real-server tests not run.
func RequireInstalled() {
	flag.Parse() // for -short; the testing package's flags are defined by now
	if testing.Short() {
		return
	}
	var missing []string
	for _, name := range []string{redisproc.Binary, cliBinary} {
		if _, err := exec.LookPath(name); err != nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		fmt.Fprintln(os.Stderr, "FAIL: "+notInstalled(missing...))
		os.Exit(1)
	}
}

// notInstalled says that programs are missing and how to install them.
func notInstalled(programs ...string) string {
	return fmt.Sprintf("%s not found on PATH: install with `%s` (or `go test -short` runs only the tests that need no server)",
		strings.Join(programs, " and "), redisproc.InstallCommand)
}

// Binary returns the path of redis-server. Under -short it skips the test,
// which needs a server; without redis-server on PATH it fails the test.
func Binary(tb testing.TB) string {
	tb.Helper()
	return binary(tb, redisproc.Binary)
}

func binary(tb testing.TB, name string) string {
	tb.Helper()
	if testing.Short() {
		tb.Skip("needs a real redis-server: skipped under -short")
	}
	path, err := exec.LookPath(name)
	if err != nil {
		tb.Fatal(notInstalled(name))
	}
	return path
}

// Start launches redis-server on a free loopback port, without persistence,
// and stops it when the test ends. Extra args are appended to the command
// line, e.g. "--cluster-enabled", "yes". Until the test ends, go-redis's
// log lines go to its log, printed only if it fails (see testLogger).
func Start(tb testing.TB, args ...string) *Server {
	tb.Helper()
	logTo(tb)
	proc, err := redisproc.Start(redisproc.Config{Bin: Binary(tb), Dir: tb.TempDir(), Args: withACLUser(args)})
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	tb.Cleanup(proc.Stop)
	return &Server{Addr: proc.Addr, Port: proc.Port, tb: tb, proc: proc}
}

// freePort asks the kernel for a free loopback TCP port, or fails tb.
func freePort(tb testing.TB) int {
	tb.Helper()
	port, err := redisproc.FreePort()
	if err != nil {
		tb.Fatalf("redistest: free port: %v", err)
	}
	return port
}

// Stop kills the server and waits for it to exit. It is idempotent and runs
// automatically at the end of the test.
func (s *Server) Stop() { s.proc.Stop() }

// Running reports whether the server process runs: false after Stop.
func (s *Server) Running() bool { return s.proc.Pid() != 0 }

// Restart kills the server and starts a fresh one on the same port, with an
// empty dataset: a crash without persistence.
func (s *Server) Restart() {
	s.tb.Helper()
	s.restart()
}

// restart is Restart, with extra appended to the command line for this
// run only.
func (s *Server) restart(extra ...string) {
	s.tb.Helper()
	if err := s.proc.Restart(extra...); err != nil {
		s.tb.Fatalf("redistest: restart: %v", err)
	}
}

// Pause sends SIGSTOP: the server keeps its connections open but answers nothing.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume sends SIGCONT after Pause.
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.tb.Helper()
	if err := s.proc.Signal(sig); err != nil {
		s.tb.Fatalf("redistest: signal %v: %v", sig, err)
	}
}

// Client returns a go-redis client for the server, closed at test end.
// Options may adjust the defaults; Addr is always the server's. Under
// ACLEnv=1 it authenticates as the least-privilege ACLUser (see Admin).
func (s *Server) Client(opts ...func(*redis.Options)) *redis.Client {
	return s.client(Options(""), opts, s.atAddr)
}

func (s *Server) atAddr(o *redis.Options) { o.Addr = s.Addr }

// client applies opts to o, then fixed (what the caller may not change),
// and returns a client closed at test end.
func (s *Server) client(o *redis.Options, opts []func(*redis.Options), fixed func(*redis.Options)) *redis.Client {
	for _, f := range opts {
		f(o)
	}
	fixed(o)
	rdb := redis.NewClient(o)
	s.tb.Cleanup(func() { _ = rdb.Close() })
	return rdb
}
