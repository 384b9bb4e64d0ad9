// Package redistest starts throwaway redis-server processes on loopback ports
// for tests. It imports nothing from baton but its own process starter,
// redisproc, so every baton package may use it from its tests without creating
// a dependency between the packages under test.
//
// A test that needs a server calls Start. When the redis-server binary is
// missing the test is skipped with a clear message, unless the CI environment
// variable is set, in which case it fails: CI must run every real-server test.
package redistest

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/reentrant/redistest/redisproc"
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

// Binary returns the path of redis-server, or skips (fails under CI) when it
// is not installed.
func Binary(tb testing.TB) string {
	tb.Helper()
	return binary(tb, redisproc.Binary)
}

func binary(tb testing.TB, name string) string {
	tb.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	msg := fmt.Sprintf("%s not found on PATH: install it (apt-get install -y redis-server) to run real-Redis tests", name)
	if os.Getenv("CI") != "" {
		tb.Fatal(msg + " (CI is set, so this is a failure, not a skip)")
	}
	tb.Skip(msg)
	return ""
}

// Start launches redis-server on a free loopback port, without persistence,
// and stops it when the test ends. Extra args are appended to the command
// line, e.g. "--cluster-enabled", "yes".
func Start(tb testing.TB, args ...string) *Server {
	tb.Helper()
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

// Restart kills the server and starts a fresh one on the same port, with an
// empty dataset: a crash without persistence.
func (s *Server) Restart() {
	s.tb.Helper()
	if err := s.proc.Restart(); err != nil {
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
