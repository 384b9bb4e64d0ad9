// Package redisproc starts and stops throwaway redis-server processes on
// loopback ports, and reads what a server says it did (INFO commandstats).
//
// It owns the process: the command line (no persistence, loopback only), the
// wait for the first PONG, and the kill that always waits for the exit, so a
// stopped Server leaves no process behind. It does not import testing, so a
// shipped command (bench/cmd/baton-bench) can use it as well as the test
// harness redistest, which wraps it for tests.
package redisproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Binary is the name of the server executable looked up on PATH.
const Binary = "redis-server"

// InstallCommand installs redis-server, and redis-cli with it, on Debian
// and Ubuntu.
const InstallCommand = "apt-get install -y redis-server"

// startTimeout bounds how long a server may take to answer its first PING.
const startTimeout = 10 * time.Second

// startAttempts is how many free ports Start tries: another process may take
// the port between the kernel naming it and the server binding it.
const startAttempts = 5

// LookPath returns the path of redis-server on PATH.
func LookPath() (string, error) { return exec.LookPath(Binary) }

// Config describes a server to start. The zero Config is a plain server.
type Config struct {
	// Bin is the redis-server executable; empty looks it up on PATH.
	Bin string
	// Dir holds the server's log and working files. Empty makes a temporary
	// directory that Stop removes.
	Dir string
	// Args are appended to the command line, e.g. "--cluster-enabled", "yes".
	Args []string
	// ConfFile, if set, is the configuration file, which comes first on the
	// command line: a sentinel needs one it can rewrite.
	ConfFile string
}

// Server is one redis-server process listening on 127.0.0.1, without
// persistence.
type Server struct {
	// Addr is "127.0.0.1:port".
	Addr string
	// Port is the TCP port the server listens on.
	Port int

	bin, dir string
	ownDir   bool
	conf     string
	args     []string
	cmd      *exec.Cmd
	done     chan struct{} // closed when cmd has exited
}

// Start launches redis-server on a free loopback port and returns once it
// answers PING. The caller must Stop it.
func Start(cfg Config) (*Server, error) {
	s := &Server{bin: cfg.Bin, dir: cfg.Dir, conf: cfg.ConfFile, args: cfg.Args}
	if s.bin == "" {
		var err error
		if s.bin, err = LookPath(); err != nil {
			return nil, err
		}
	}
	if s.dir == "" {
		dir, err := os.MkdirTemp("", "redisproc-")
		if err != nil {
			return nil, err
		}
		s.dir, s.ownDir = dir, true
	}
	var lastErr error
	for range startAttempts {
		port, err := FreePort()
		if err != nil {
			s.Stop()
			return nil, fmt.Errorf("redisproc: free port: %w", err)
		}
		s.Port = port
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if lastErr = s.launch(); lastErr == nil {
			return s, nil
		}
	}
	s.Stop()
	return nil, fmt.Errorf("redisproc: redis-server did not start: %w", lastErr)
}

// FreePort asks the kernel for a free loopback TCP port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// launch starts the process on s.Port, with Start's args and then extra.
func (s *Server) launch(extra ...string) error {
	var argv []string
	if s.conf != "" {
		argv = append(argv, s.conf)
	}
	argv = append(argv,
		"--port", strconv.Itoa(s.Port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--logfile", filepath.Join(s.dir, "redis.log"),
	)
	cmd := exec.Command(s.bin, slices.Concat(argv, s.args, extra)...)
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
			s.cmd = nil
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

// kill ends the process, if any, and waits for its exit.
func (s *Server) kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT) // a stopped process cannot die
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// Pid is the server's process ID, 0 when it is not running.
func (s *Server) Pid() int {
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Stop kills the server, waits for it to exit, and removes the directory
// Start made for it. It is idempotent.
func (s *Server) Stop() {
	s.kill()
	if s.ownDir {
		_ = os.RemoveAll(s.dir)
		s.ownDir = false
	}
}

// Restart kills the server and starts a fresh one on the same port, with
// what its persistence kept: an empty dataset by default, a crash without
// persistence. extra are appended to the command line Start made, for this
// run only: "--replicaof", host, port brings a crashed master back as a
// replica.
func (s *Server) Restart(extra ...string) error {
	s.kill()
	return s.launch(extra...)
}

// Kill kills the server and waits for its exit, as Restart's first half:
// the port stays the server's and its directory, with what persistence
// wrote there, stays for Relaunch.
func (s *Server) Kill() { s.kill() }

// Relaunch starts a server Kill ended again, on the same port and
// directory: Restart's second half, after an outage as long as the
// caller's.
func (s *Server) Relaunch() error {
	if s.cmd != nil {
		return errors.New("redisproc: server is running")
	}
	return s.launch()
}

// Signal sends sig to the server process, e.g. SIGSTOP to make it answer
// nothing while its connections stay open.
func (s *Server) Signal(sig os.Signal) error {
	if s.cmd == nil {
		return errors.New("redisproc: server is not running")
	}
	return s.cmd.Process.Signal(sig)
}

// Synced reports whether the server rdb reaches is a replica whose link
// to its master is up (INFO replication: master_link_status:up), which it
// is once its first sync has ended.
func Synced(ctx context.Context, rdb redis.Cmdable) bool {
	info, err := rdb.Info(ctx, "replication").Result()
	return err == nil && strings.Contains(info, "master_link_status:up")
}
