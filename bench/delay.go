package bench

import (
	"errors"
	"net"
	"sync"
	"time"
)

// delayQueue is how many reads may be in flight inside the proxy before
// its readers wait: more than a run's clients have commands in flight.
const delayQueue = 4096

// DelayProxy is a loopback TCP proxy that holds every byte back for its
// delay in each direction, so that a client on this machine meets the
// round trip of a network: a PING through a proxy of 500 µs takes about
// 1 ms more than without. Bytes keep their order and are never merged
// with later ones, so the server sees each command when the network would
// deliver it.
type DelayProxy struct {
	// Addr is where clients connect: 127.0.0.1 and a free port.
	Addr   string
	target string
	delay  time.Duration
	ln     net.Listener

	queue chan delivery // reads of every connection, in order
	stop  chan struct{} // closed by Close

	mu     sync.Mutex // guards conns and closed
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// StartDelayProxy listens on a free loopback port and forwards each
// connection to target, delay each way, until Close.
func StartDelayProxy(target string, delay time.Duration) (*DelayProxy, error) {
	if delay <= 0 {
		return nil, errors.New("bench: a delay proxy needs a delay > 0")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &DelayProxy{Addr: ln.Addr().String(), target: target, delay: delay, ln: ln,
		queue: make(chan delivery, delayQueue), stop: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	p.wg.Go(p.deliver)
	return p, nil
}

// Close stops accepting, closes every connection and waits for the
// proxy's goroutines.
func (p *DelayProxy) Close() error {
	p.mu.Lock()
	if !p.closed {
		close(p.stop)
	}
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *DelayProxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		if !p.track(client, server) {
			return
		}
		hangUp := func() {
			_ = client.Close()
			_ = server.Close()
			p.untrack(client, server)
		}
		p.wg.Go(func() { defer hangUp(); p.forward(server, client) })
		p.wg.Go(func() { defer hangUp(); p.forward(client, server) })
	}
}

// track registers the connections for Close; false, with both closed, if
// the proxy is closing already.
func (p *DelayProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *DelayProxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		delete(p.conns, c)
	}
}

// delivery is bytes read from one side at one instant, due at the other
// a delay later.
type delivery struct {
	due time.Time
	dst net.Conn
	b   []byte
}

// forward reads src and queues each read for dst. It returns when src
// ends; Close ends the deliveries still queued.
func (p *DelayProxy) forward(dst, src net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			select {
			case p.queue <- delivery{due: time.Now().Add(p.delay), dst: dst, b: append([]byte(nil), buf[:n]...)}:
			case <-p.stop:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// deliver writes each queued read when it is due. One goroutine serves
// every connection: with one delay for all, reads fall due in the order
// they were queued, so one sleep until the next is due is all it takes,
// and reads that fall due together cost one wake-up.
func (p *DelayProxy) deliver() {
	for {
		select {
		case d := <-p.queue:
			sleepPrecisely(time.Until(d.due))
			_, _ = d.dst.Write(d.b) // a closed connection's last reads are lost, as the network's would be
		case <-p.stop:
			return
		}
	}
}
