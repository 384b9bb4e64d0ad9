package redistest

import (
	"bytes"
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonlock/baton/bench/redistest/redisproc"
	"github.com/batonlock/baton/bench/relay"
)

// replicaSourceIP is the loopback address a lagging replica's outgoing
// connections come from (redis-server's bind-source-addr). It is how the
// ReplicationRelay tells the replication link from every other connection
// it carries: lock clients and sentinels reach the master through the same
// relay, and only the replication stream may be held.
const replicaSourceIP = "127.0.0.2"

// ReplicationRelay stands between a master and a lagging replica: the
// replica's replication link runs through it, and it can hold the stream
// the master sends, as a slow network or a busy master would. Every other
// connection through it is passed on untouched.
//
// The replica acknowledges (REPLCONF ACK) only the offset it has received,
// so while the relay holds, the master's WAIT does not count the replica
// for the held writes: the relay needs to hold one direction only.
type ReplicationRelay struct {
	// Addr is where the replica, and anyone else, reaches the master
	// through the relay: "127.0.0.1:port".
	Addr string
	// Port is Addr's port.
	Port int

	wg sync.WaitGroup // the goroutines serve starts; relay.Close ends their connections

	mu      sync.Mutex // guards holding, links, pass, and every link's held bytes and client writes
	holding bool
	links   map[*replLink]struct{}
	pass    *passOn // set by PassOn until it has passed
}

// passOn is a PassOn waiting for its command: cmd, and passed, closed once
// the held stream through cmd went on.
type passOn struct {
	cmd    []byte
	passed chan struct{}
}

// GetAck is the command a master writes to its replicas once a client
// blocks in WAIT (REPLCONF GETACK *), as the replication stream carries
// it: what PassOn waits for to let one WAIT's acknowledgement through.
var GetAck = []byte("*3\r\n$8\r\nREPLCONF\r\n$6\r\nGETACK\r\n$1\r\n*\r\n")

// replLink is one replication connection through the relay.
type replLink struct {
	client, server net.Conn
	held           []byte // master bytes not yet forwarded
	masterGone     bool   // the master end has closed; forward nothing more from it
}

// StartReplicationRelay starts a relay to master, closed at test end.
func StartReplicationRelay(tb testing.TB, master *Server) *ReplicationRelay {
	tb.Helper()
	r := &ReplicationRelay{links: map[*replLink]struct{}{}}
	rl, err := relay.Start(master.Addr, r.serve)
	if err != nil {
		tb.Fatalf("redistest: replication relay: %v", err)
	}
	tb.Cleanup(func() {
		_ = rl.Close()
		r.wg.Wait()
	})
	r.Addr = rl.Addr
	_, port, _ := net.SplitHostPort(rl.Addr)
	r.Port, _ = strconv.Atoi(port)
	return r
}

// StartLaggingReplica starts a replica of master whose replication link
// runs through a new ReplicationRelay, and returns once it has synced: what
// master held before the call is on the replica too. The replica announces
// its own port (REPLCONF listening-port), so the master's INFO replication,
// and a sentinel that reads it, name the replica itself, not the relay.
func StartLaggingReplica(tb testing.TB, master *Server) (*Server, *ReplicationRelay) {
	tb.Helper()
	r := StartReplicationRelay(tb, master)
	return startReplica(tb, master, r.Port, "--bind-source-addr", replicaSourceIP), r
}

// Hold stops forwarding the master's replication stream to the replica;
// the relay keeps what arrives until Release or Drop.
func (r *ReplicationRelay) Hold() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.holding = true
}

// PassOn makes a holding relay forward, once, what it holds as soon as
// that includes cmd: everything up to the end of cmd goes on, in order,
// and what comes after stays held. It happens on the relay's own
// goroutine as the bytes arrive, so no test goroutine's delay, and no
// window between a Release and a Hold, decides what passes. The channel
// is closed once it has passed.
func (r *ReplicationRelay) PassOn(cmd []byte) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pass = &passOn{cmd: cmd, passed: make(chan struct{})}
	for l := range r.links {
		r.passHeld(l)
	}
	return r.pass.passed
}

// passHeld forwards l's held bytes through the end of the pending PassOn's
// command, if they hold it; r.mu is held.
func (r *ReplicationRelay) passHeld(l *replLink) {
	if r.pass == nil {
		return
	}
	i := bytes.Index(l.held, r.pass.cmd)
	if i < 0 {
		return
	}
	end := i + len(r.pass.cmd)
	_, _ = l.client.Write(l.held[:end])
	l.held = append([]byte(nil), l.held[end:]...)
	close(r.pass.passed)
	r.pass = nil
}

// Release forwards what the relay holds, in order, and forwards again from
// then on. A link whose master has gone is then closed, as it would have
// been had the relay never held.
func (r *ReplicationRelay) Release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.holding = false
	for l := range r.links {
		_, _ = l.client.Write(l.held)
		l.held = nil
		if l.masterGone {
			_ = l.client.Close()
		}
	}
}

// Drop discards what the relay holds and cuts every replication link, as
// the death of the master loses what it had not sent yet; the relay stops
// holding. Only a dead master makes the loss real: a replica of a live
// master reconnects through the relay and resyncs the dropped bytes.
func (r *ReplicationRelay) Drop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.holding = false
	for l := range r.links {
		l.held = nil
		_ = l.client.Close()
		_ = l.server.Close()
	}
}

// Holds reports whether the master's stream the relay holds contains
// part, e.g. "GETACK": WAIT's request for acknowledgements, which its
// master writes once a client blocks in WAIT.
func (r *ReplicationRelay) Holds(part string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for l := range r.links {
		if strings.Contains(string(l.held), part) {
			return true
		}
	}
	return false
}

// Held is how many bytes of the master's stream the relay holds.
func (r *ReplicationRelay) Held() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for l := range r.links {
		n += len(l.held)
	}
	return n
}

func (r *ReplicationRelay) serve(client, server net.Conn) {
	host, _, _ := net.SplitHostPort(client.RemoteAddr().String())
	if host != replicaSourceIP {
		r.wg.Go(func() { pipe(client, server) })
		pipe(server, client)
		return
	}
	l := &replLink{client: client, server: server}
	r.mu.Lock()
	r.links[l] = struct{}{}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.links, l)
		r.mu.Unlock()
	}()
	r.wg.Go(func() { r.forward(l) })
	// The replica's acknowledgements go on unheld until the replica hangs
	// up or Release or Drop ends the link. A write to a dead master fails,
	// but the link must stay up while the relay holds: only Drop (or
	// Release) decides what the replica gets of what it holds.
	buf := make([]byte, 16<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			_, _ = server.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// forward copies the master's stream to the replica, or into the held
// bytes while the relay holds. When the master's end closes, the replica's
// is closed too, unless bytes are held: then Release or Drop closes it.
func (r *ReplicationRelay) forward(l *replLink) {
	buf := make([]byte, 16<<10)
	for {
		n, err := l.server.Read(buf)
		r.mu.Lock()
		if r.holding {
			l.held = append(l.held, buf[:n]...)
			r.passHeld(l)
		} else if n > 0 {
			_, _ = l.client.Write(buf[:n])
		}
		if err != nil {
			l.masterGone = true
			if len(l.held) == 0 {
				_ = l.client.Close()
			}
		}
		r.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// pipe copies from src to dst, then closes both: the end of either
// direction ends the connection.
func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
}

// startReplica starts a replica of master, reached on port (master's own,
// or a relay's), with extra args, and returns once it has synced. Once
// promoted by a failover it too sends a replica its first sync at once
// (see syncAtOnce): the demoted master, whose writes the promoted replica
// may lack, needs a full sync, and would otherwise replicate nothing for
// 5 s after the failover.
func startReplica(tb testing.TB, master *Server, port int, args ...string) *Server {
	tb.Helper()
	syncAtOnce(tb, master)
	args = append([]string{"--replicaof", "127.0.0.1", strconv.Itoa(port), "--repl-diskless-sync-delay", "0"}, args...)
	replica := Start(tb, args...)
	awaitSynced(tb, replica)
	return replica
}

// syncAtOnce makes master send a new replica its first sync at once,
// rather than after the default 5s wait for more replicas
// (repl-diskless-sync-delay).
func syncAtOnce(tb testing.TB, master *Server) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := master.Admin().ConfigSet(ctx, "repl-diskless-sync-delay", "0").Err(); err != nil {
		tb.Fatalf("redistest: CONFIG SET on %s: %v", master.Addr, err)
	}
}

// awaitSynced waits until replica has synced with its master.
func awaitSynced(tb testing.TB, replica *Server) {
	tb.Helper()
	admin := replica.Admin()
	await(tb, func(ctx context.Context) bool { return redisproc.Synced(ctx, admin) }, "the replica syncs with its master")
}
