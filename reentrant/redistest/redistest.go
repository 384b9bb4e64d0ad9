// Package redistest starts throwaway redis-server processes on loopback ports
// for tests. It imports nothing from baton, so every baton package may use it
// from its tests without creating a dependency between the packages under test.
//
// A test that needs a server calls Start. When the redis-server binary is
// missing the test is skipped with a clear message, unless the CI environment
// variable is set, in which case it fails: CI must run every real-server test.
package redistest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// startTimeout bounds how long a server may take to answer its first PING.
const startTimeout = 10 * time.Second

// Server is one redis-server process listening on 127.0.0.1.
type Server struct {
	// Addr is "127.0.0.1:port".
	Addr string
	// Port is the TCP port the server listens on.
	Port int

	tb   testing.TB
	dir  string
	args []string
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Binary returns the path of redis-server, or skips (fails under CI) when it
// is not installed.
func Binary(tb testing.TB) string {
	tb.Helper()
	return binary(tb, "redis-server")
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
	bin := Binary(tb)
	s := &Server{tb: tb, dir: tb.TempDir(), args: withACLUser(args)}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			tb.Fatalf("redistest: free port: %v", err)
		}
		s.Port = port
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if lastErr = s.launch(bin); lastErr == nil {
			tb.Cleanup(s.Stop)
			return s
		}
	}
	tb.Fatalf("redistest: redis-server did not start: %v", lastErr)
	return nil
}

// freePort asks the kernel for a free loopback TCP port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) launch(bin string) error {
	argv := []string{
		"--port", strconv.Itoa(s.Port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--logfile", filepath.Join(s.dir, "redis.log"),
	}
	argv = append(argv, s.args...)
	cmd := exec.Command(bin, argv...)
	cmd.Dir = s.dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd = cmd
	s.done = make(chan struct{})
	go func() { _ = cmd.Wait(); close(s.done) }()

	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer rdb.Close()
	for {
		if err := rdb.Ping(ctx).Err(); err == nil {
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("redis-server exited: %s %s", stderr.String(), s.logTail())
		case <-ctx.Done():
			s.kill()
			return fmt.Errorf("no PONG within %v: %s", startTimeout, s.logTail())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (s *Server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

func (s *Server) kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT) // a stopped process cannot die
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// Stop kills the server and waits for it to exit. It is idempotent and runs
// automatically at the end of the test.
func (s *Server) Stop() { s.kill() }

// Restart kills the server and starts a fresh one on the same port, with an
// empty dataset: a crash without persistence.
func (s *Server) Restart() {
	s.tb.Helper()
	s.kill()
	if err := s.launch(Binary(s.tb)); err != nil {
		s.tb.Fatalf("redistest: restart: %v", err)
	}
}

// Pause sends SIGSTOP: the server keeps its connections open but answers nothing.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume sends SIGCONT after Pause.
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.tb.Helper()
	if s.cmd == nil {
		s.tb.Fatal("redistest: server is not running")
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
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
