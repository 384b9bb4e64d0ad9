package notify

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Mode selects the pub/sub commands the hub uses.
type Mode int

const (
	// Classic uses SUBSCRIBE and PUBLISH over one connection.
	Classic Mode = iota
	// Sharded uses SSUBSCRIBE and SPUBLISH (Redis 7+). On a *redis.ClusterClient
	// the hub keeps one connection per master node.
	Sharded
)

// Options configures a Hub.
type Options struct {
	// Mode selects classic or sharded pub/sub.
	Mode Mode
	// HealthCheckInterval: a connection idle this long is PINGed; no reply
	// within another interval means it is dead and is replaced. Zero means 1s.
	HealthCheckInterval time.Duration
	// Unclaimed, if set, gets every message that no subscription claims:
	// one whose address no subscription of its channel has, or one left
	// untaken in a subscription that closed. Of a message addressed to
	// several IDs, it gets "<id> <payload>" for each ID left unclaimed.
	// Whatever such a message offered can so be handed back. It is called without the hub's locks,
	// from the hub's reader or from Subscription.Close, and must not block.
	Unclaimed func(channel, msg string)
	// Resubscribed, if set, is told each time Redis confirms again a
	// subscription that was lost with its connection or its slot's move,
	// right after that subscription's mailboxes got their resync: the
	// server has been unreachable or has changed, and whatever it kept may
	// be gone. It is called without the hub's locks, from the hub's
	// reader, once per channel confirmed again, and must not block.
	Resubscribed func()
}

// Errors returned by the hub. They carry the package prefix so a log line says
// where it came from.
var (
	// ErrClosed is returned once the hub has been closed.
	ErrClosed = errors.New("notify: hub closed")
	// ErrWaitTimeout is returned by Wait when its timeout elapses first.
	ErrWaitTimeout = errors.New("notify: wait timed out")
	// ErrNilClient is returned by New without a client.
	ErrNilClient = errors.New("notify: nil redis client")
	// ErrUnsupportedClient is returned by New for a client other than a
	// *redis.Client (single node, or Sentinel failover) or a
	// *redis.ClusterClient: a Ring, for one, cannot open a pub/sub
	// connection before it knows a channel.
	ErrUnsupportedClient = errors.New("notify: unsupported redis client")
	// ErrSubscriptionClosed is returned by Wait on a closed Subscription.
	ErrSubscriptionClosed = errors.New("notify: subscription closed")
	// ErrDuplicateID is returned by Subscribe for an ID that a live
	// subscription of the channel already has.
	ErrDuplicateID = errors.New("notify: duplicate subscription ID")
	// ErrInvalidID is returned by Subscribe for an ID that no address can
	// name: one with a space (which ends an address) or a comma (which
	// separates the IDs of an address).
	ErrInvalidID = errors.New("notify: invalid subscription ID")
)

const defaultHealthCheckInterval = time.Second

// Hub multiplexes the channel subscriptions of one Redis client over as few
// pub/sub connections as its Mode allows, and delivers each message to the
// subscription it is addressed to. Create one per client with New; it is
// safe for concurrent use.
type Hub struct {
	be           backend
	interval     time.Duration
	unclaimed    func(channel, msg string)
	resubscribed func()
	life         context.Context // bounds all hub I/O; cancelled by Close
	cancel       context.CancelFunc
	done         chan struct{} // closed by Close
	once         sync.Once
	wg           sync.WaitGroup // one per reader goroutine

	// io is held across a state transition that sends a command and the send
	// itself, so commands reach the wire in the order of the transitions, and
	// across a reconnect. It is a channel so that a Subscribe can stop
	// waiting for it when its context ends.
	io chan struct{}

	mu      sync.Mutex // guards the fields below; never held across network I/O
	closed  bool
	entries map[string]*entry // channels with at least one reference
	conns   map[string]*conn  // by routing key

}

// New returns a hub for rdb. It opens no connection until the first Subscribe.
func New(rdb redis.UniversalClient, opts Options) (*Hub, error) {
	if rdb == nil {
		return nil, ErrNilClient
	}
	be, err := newBackend(rdb, opts.Mode)
	if err != nil {
		return nil, err
	}
	return newHub(be, opts), nil
}

func newHub(be backend, opts Options) *Hub {
	interval := opts.HealthCheckInterval
	if interval <= 0 {
		interval = defaultHealthCheckInterval
	}
	unclaimed := opts.Unclaimed
	if unclaimed == nil {
		unclaimed = func(string, string) {}
	}
	resubscribed := opts.Resubscribed
	if resubscribed == nil {
		resubscribed = func() {}
	}
	life, cancel := context.WithCancel(context.Background())
	return &Hub{
		be:           be,
		interval:     interval,
		unclaimed:    unclaimed,
		resubscribed: resubscribed,
		life:         life,
		cancel:       cancel,
		done:         make(chan struct{}),
		io:           make(chan struct{}, 1),
		entries:      map[string]*entry{},
		conns:        map[string]*conn{},
	}
}

// Subscribe takes a reference on channel, with a mailbox for the messages
// addressed to id (a message "<id> <payload>" is addressed to id, and so is
// one whose address lists id among others: "<id1>,<id2> <payload>"), and
// returns once Redis has confirmed the subscription, so that whatever the
// caller checks after it returns, a message published later reaches the
// subscription. An empty id takes a reference with no mailbox, which keeps
// the channel subscribed; an id with a space or a comma is refused with
// ErrInvalidID. When ctx ends first the error satisfies
// errors.Is(err, ctx.Err()) and the reference is released. After Close it
// returns ErrClosed.
func (h *Hub) Subscribe(ctx context.Context, channel, id string) (*Subscription, error) {
	if strings.ContainsAny(id, " ,") {
		return nil, fmt.Errorf("%w: %q", ErrInvalidID, id)
	}
	return h.subscribe(ctx, channel, &Subscription{hub: h, id: id, signal: make(chan struct{}, 1)})
}

// subscribe takes the reference of s on channel, and returns s once Redis
// has confirmed the subscription (see Subscribe).
func (h *Hub) subscribe(ctx context.Context, channel string, s *Subscription) (*Subscription, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	e, err := h.ref(ctx, channel, s)
	if err != nil {
		return nil, err
	}
	s.entry = e
	if err := h.awaitConfirmed(ctx, e); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Channels returns the number of channels currently referenced.
func (h *Hub) Channels() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, e := range h.entries {
		if e.refs > 0 {
			n++ // an entry without references is being unsubscribed
		}
	}
	return n
}

// Close wakes every waiter with ErrClosed, closes the connections and waits
// for the hub's goroutines to end. Dials in flight are cancelled; a handshake
// or write in flight is waited for, which the client's timeouts bound. It is
// idempotent.
func (h *Hub) Close() error {
	h.once.Do(func() {
		h.mu.Lock()
		h.closed = true
		h.mu.Unlock()
		close(h.done)
		h.cancel()
		// Once io is ours no connection can be added, and no PubSub replaced.
		h.io <- struct{}{}
		h.mu.Lock()
		pss := make([]*redis.PubSub, 0, len(h.conns))
		for _, c := range h.conns {
			pss = append(pss, c.ps)
		}
		h.mu.Unlock()
		for _, ps := range pss {
			_ = ps.Close() // the readers see it and exit
		}
		<-h.io
		h.wg.Wait()
	})
	return nil
}

// ref takes a reference on channel for s, subscribing it when it is the
// first.
func (h *Hub) ref(ctx context.Context, channel string, s *Subscription) (*entry, error) {
	if e, err := h.refExisting(channel, s); e != nil || err != nil {
		return e, err
	}
	if err := h.lockIO(ctx); err != nil {
		return nil, err
	}
	defer h.unlockIO()
	// Another Subscribe may have created the entry while this one waited.
	if e, err := h.refExisting(channel, s); e != nil || err != nil {
		return e, err
	}
	key, err := h.be.route(ctx, channel)
	if err != nil {
		return nil, err
	}
	e := &entry{channel: channel, ready: make(chan struct{}), mailbox: map[string]*Subscription{}}
	h.mu.Lock()
	e.add(s)
	h.mu.Unlock()
	h.subscribeVia(e, key)
	return e, nil
}

// refExisting adds s to channel's entry if there is one. No command is
// needed for that, so it does not wait for io.
func (h *Hub) refExisting(channel string, s *Subscription) (*entry, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	e := h.entries[channel]
	if e == nil {
		return nil, nil
	}
	if s.id != "" && e.mailbox[s.id] != nil {
		return nil, ErrDuplicateID
	}
	e.add(s)
	return e, nil
}

// add takes a reference for s. h.mu is held.
func (e *entry) add(s *Subscription) {
	e.refs++
	switch {
	case s.every:
		e.addEvery(s)
	case s.id != "":
		e.mailbox[s.id] = s
	}
}

// subscribeVia serves e on the connection for key, creating it if needed, and
// sends the subscribe. The caller holds io. A failed send closes the PubSub,
// so that its reader reconnects and subscribes e again.
func (h *Hub) subscribeVia(e *entry, key string) {
	h.mu.Lock()
	c := h.conns[key]
	fresh := c == nil
	if fresh {
		c = &conn{hub: h, key: key, ps: h.be.open(h.life, key), sent: map[string]pending{}}
		h.conns[key] = c
	}
	e.conn = c
	e.moving = false
	h.entries[e.channel] = e
	c.count(e.channel, pending{subs: 1})
	h.mu.Unlock()

	if err := h.be.subscribe(c.ps, h.life, e.channel); err != nil {
		_ = c.ps.Close()
	}
	if fresh {
		// Started after the first send: reading an unused PubSub would dial
		// a node of the client's choosing rather than the channel's owner.
		h.wg.Add(1)
		go c.run()
	}
}

// release drops s's reference and mailbox, handing back what it never
// took. The last reference unsubscribes the channel, in the background: the
// command may wait behind a reconnect that holds io, or behind go-redis's
// PubSub mutex while its reader redials, and a caller giving up on a wait
// must not wait for that.
func (h *Hub) release(s *Subscription) {
	e := s.entry
	h.mu.Lock()
	if s.id != "" && e.mailbox[s.id] == s {
		delete(e.mailbox, s.id)
	}
	delete(e.every, s)
	var untaken []string
	for _, d := range s.mail {
		if !d.Resync && !s.every {
			untaken = append(untaken, s.id+" "+d.Payload)
		}
	}
	s.mail = nil
	e.refs--
	last := e.refs == 0 && !h.closed
	if last {
		h.wg.Add(1) // under mu while not closed: Close's Wait comes after
	}
	h.mu.Unlock()
	for _, msg := range untaken {
		h.unclaimed(e.channel, msg)
	}
	if last {
		go func() {
			defer h.wg.Done()
			h.unsubscribeIfUnused(e)
		}()
	}
}

// unsubscribeIfUnused unsubscribes e's channel, unless a Subscribe took a
// new reference since the last one was dropped: then it stays, and the new
// reference finds it subscribed.
func (h *Hub) unsubscribeIfUnused(e *entry) {
	if h.lockIO(h.life) != nil {
		return // closed: the connections are closed with the hub
	}
	defer h.unlockIO()
	h.mu.Lock()
	send := e.refs == 0 && h.entries[e.channel] == e && !h.closed
	c := e.conn
	if send {
		delete(h.entries, e.channel)
		c.count(e.channel, pending{unsubs: 1})
	}
	h.mu.Unlock()
	if send {
		if err := h.be.unsubscribe(c.ps, h.life, e.channel); err != nil {
			_ = c.ps.Close()
		}
	}
}

// awaitConfirmed blocks until e is confirmed by Redis.
func (h *Hub) awaitConfirmed(ctx context.Context, e *entry) error {
	h.mu.Lock()
	ready := e.ready
	h.mu.Unlock()
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-h.done:
		return ErrClosed
	}
}

func (h *Hub) lockIO(ctx context.Context) error {
	// Checked first: once Close has given io back, a select among ready
	// cases could still pick io and open a connection after Close.
	select {
	case <-h.done:
		return ErrClosed
	default:
	}
	select {
	case h.io <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-h.done:
		return ErrClosed
	}
}

func (h *Hub) unlockIO() { <-h.io }

// served returns the entry of channel if connection c serves it.
func (h *Hub) served(c *conn, channel string) *entry {
	if e := h.entries[channel]; e != nil && e.conn == c {
		return e
	}
	return nil
}
