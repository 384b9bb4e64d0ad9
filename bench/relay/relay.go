// Package relay accepts TCP connections on a loopback port and pairs each
// with a new connection to a target server, for proxies that stand between
// Redis clients and a server on one machine: the bench's delay proxy, and
// the tests' fault proxies.
package relay

import (
	"net"
	"sync"
)

// Relay is a loopback listener whose connections are each paired with one
// to the target and handed to a serve function.
type Relay struct {
	// Addr is where clients connect: 127.0.0.1 and a free port.
	Addr   string
	target string
	ln     net.Listener
	serve  func(client, server net.Conn)

	mu     sync.Mutex // guards conns and closed
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Start listens on a free loopback port. For each connection it dials
// target and runs serve(client, server) in a goroutine of its own; when
// serve returns, both connections are closed. A connection whose dial
// fails is closed at once.
func Start(target string, serve func(client, server net.Conn)) (*Relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Relay{Addr: ln.Addr().String(), target: target, ln: ln, serve: serve, conns: map[net.Conn]struct{}{}}
	r.wg.Go(r.accept)
	return r, nil
}

// Go runs f in a goroutine that Close waits for.
func (r *Relay) Go(f func()) { r.wg.Go(f) }

// Close stops accepting, closes every connection, and waits for the
// serve functions and the goroutines of Go, which must return once their
// connections are closed.
func (r *Relay) Close() error {
	r.mu.Lock()
	r.closed = true
	for c := range r.conns {
		_ = c.Close()
	}
	r.mu.Unlock()
	err := r.ln.Close()
	r.wg.Wait()
	return err
}

func (r *Relay) accept() {
	for {
		client, err := r.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", r.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		if !r.track(client, server) {
			return
		}
		r.wg.Go(func() {
			defer r.untrack(client, server)
			r.serve(client, server)
		})
	}
}

// track registers the connections for Close; false, with both closed, if
// the relay is closing already.
func (r *Relay) track(conns ...net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		r.conns[c] = struct{}{}
	}
	return true
}

// untrack closes the connections and forgets them.
func (r *Relay) untrack(conns ...net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
		delete(r.conns, c)
	}
}
