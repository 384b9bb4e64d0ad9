package bench

import (
	"errors"
	"net"
	"sync"
	"time"

	"github.com/batonlock/baton/bench/relay"
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
	Addr  string
	delay time.Duration
	relay *relay.Relay
	queue chan delivery // reads of every connection, in order
	stop  chan struct{} // closed by Close
	once  sync.Once
}

// StartDelayProxy listens on a free loopback port and forwards each
// connection to target, delay each way, until Close.
func StartDelayProxy(target string, delay time.Duration) (*DelayProxy, error) {
	if delay <= 0 {
		return nil, errors.New("bench: a delay proxy needs a delay > 0")
	}
	p := &DelayProxy{delay: delay, queue: make(chan delivery, delayQueue), stop: make(chan struct{})}
	r, err := relay.Start(target, p.serve)
	if err != nil {
		return nil, err
	}
	p.Addr, p.relay = r.Addr, r
	r.Go(p.deliver)
	return p, nil
}

// Close closes every connection and waits for the proxy's goroutines.
func (p *DelayProxy) Close() error {
	p.once.Do(func() { close(p.stop) })
	return p.relay.Close()
}

// serve forwards both ways until either side ends, and then ends the
// other.
func (p *DelayProxy) serve(client, server net.Conn) {
	hangUp := func() { _ = client.Close(); _ = server.Close() }
	var wg sync.WaitGroup
	wg.Go(func() { defer hangUp(); p.forward(server, client) })
	p.forward(client, server)
	hangUp()
	wg.Wait()
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
