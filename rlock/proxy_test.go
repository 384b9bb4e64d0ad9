package rlock

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/bench/relay"
)

// proxy is a loopback TCP proxy between go-redis clients and one Redis
// server, for the network faults a server cannot produce by itself: a reply
// lost after its command ran, and a blackhole that keeps sockets open but
// forwards nothing. It reads RESP2 and RESP3 on both directions, so that it
// knows which reply answers which command.
type proxy struct {
	Addr  string
	relay *relay.Relay

	hole      gate          // shut by Blackhole: nothing goes through
	replies   gate          // shut by HoldReplies: no reply goes through
	stop      chan struct{} // closed by Close
	closeOnce sync.Once

	mu      sync.Mutex
	rule    *dropRule // armed by DropNextReply, taken by the first match
	dropped atomic.Int64
}

// gate holds traffic back while shut. The zero value is open.
type gate struct {
	mu   sync.Mutex    // guards open
	open chan struct{} // while shut: closed when it opens; nil while open
}

func (g *gate) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open == nil {
		g.open = make(chan struct{})
	}
}

func (g *gate) reopen() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open != nil {
		close(g.open)
		g.open = nil
	}
}

// pass blocks while the gate is shut; false when stop closes first.
func (g *gate) pass(stop <-chan struct{}) bool {
	g.mu.Lock()
	open := g.open
	g.mu.Unlock()
	if open == nil {
		select {
		case <-stop:
			return false
		default:
			return true
		}
	}
	select {
	case <-open:
		return true
	case <-stop:
		return false
	}
}

// HoldReplies keeps every reply from the server back, while commands still
// go through, until ReleaseReplies.
func (p *proxy) HoldReplies() { p.replies.shut() }

// ReleaseReplies lets the held-back replies through, in order.
func (p *proxy) ReleaseReplies() { p.replies.reopen() }

// dropRule swallows the reply to the first command it matches, or, with
// held, holds it back until held closes.
type dropRule struct {
	match func(cmd []string) bool
	held  chan struct{}
	// hangUp closes the connection after swallowing the reply, so the
	// client reads EOF at once; otherwise the connection stays open and the
	// client's read times out.
	hangUp bool
	// sendAfter, armed by HoldNextCommand, holds the command itself back
	// until it closes (a command late on the network); answered closes
	// once the server's reply to it comes, which then goes on as any.
	sendAfter, answered chan struct{}
}

// startProxy listens on a loopback port and forwards to target until the
// test ends.
func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	p := &proxy{stop: make(chan struct{})}
	r, err := relay.Start(target, p.serve)
	if err != nil {
		t.Fatal(err)
	}
	p.Addr, p.relay = r.Addr, r
	t.Cleanup(p.Close)
	return p
}

// client returns a go-redis client that goes through the proxy, closed at
// test end: what redistest's Server.Client would be, on the proxy's address.
func (p *proxy) client(t *testing.T, opts ...func(*redis.Options)) *redis.Client {
	o := redistest.Options("")
	for _, f := range opts {
		f(o)
	}
	o.Addr = p.Addr
	rdb := redis.NewClient(o)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// newClient returns a Client that goes through the proxy, closed at test
// end.
func (p *proxy) newClient(t *testing.T, opts ...Option) *Client {
	c, err := New(p.client(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// DropNextReply arms rule: the reply to the next command it matches never
// reaches the client, though the server ran the command.
func (p *proxy) DropNextReply(match func(cmd []string) bool, hangUp bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rule = &dropRule{match: match, hangUp: hangUp}
}

// HoldNextReply holds back the reply to the next command match matches,
// though the server ran the command, until the returned func is called;
// the other connections go on.
func (p *proxy) HoldNextReply(match func(cmd []string) bool) (release func()) {
	held := make(chan struct{})
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rule = &dropRule{match: match, held: held}
	var once sync.Once
	return func() { once.Do(func() { close(held) }) }
}

// HoldNextCommand holds back the next command match matches, before the
// server sees it, until send is called: the command then runs, however
// long ago its client gave up on it and closed the connection (its data
// was on the wire). answered closes once the server has replied to it.
// Commands on other connections go on.
func (p *proxy) HoldNextCommand(match func(cmd []string) bool) (send func(), answered <-chan struct{}) {
	r := &dropRule{match: match, sendAfter: make(chan struct{}), answered: make(chan struct{})}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rule = r
	var once sync.Once
	return func() { once.Do(func() { close(r.sendAfter) }) }, r.answered
}

// Taken says whether the armed rule has matched a command (or none is
// armed): a test arms its next rule only then, as one replaces the other.
func (p *proxy) Taken() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rule == nil
}

// Dropped is how many replies have been swallowed.
func (p *proxy) Dropped() int64 { return p.dropped.Load() }

// Blackhole stops forwarding in both directions, on every connection, until
// Restore; connections stay open and new ones are accepted. What was sent
// meanwhile waits, and goes on once restored: a delayed network, not a
// lossy one.
func (p *proxy) Blackhole() { p.hole.shut() }

// Restore ends a Blackhole.
func (p *proxy) Restore() { p.hole.reopen() }

// Close closes every connection and waits for the proxy's goroutines.
func (p *proxy) Close() {
	p.closeOnce.Do(func() {
		close(p.stop)
		_ = p.relay.Close()
	})
}

// serve forwards commands and replies until either side ends, and then
// ends the other.
func (p *proxy) serve(client, server net.Conn) {
	q := &replyQueue{}
	hangUp := func() { _ = client.Close(); _ = server.Close() }
	var wg sync.WaitGroup
	wg.Go(func() { defer hangUp(); p.forwardCommands(client, server, q) })
	defer wg.Wait()
	defer hangUp()
	p.forwardReplies(server, client, q, hangUp)
}

func (p *proxy) forwardCommands(client, server net.Conn, q *replyQueue) {
	r := bufio.NewReader(client)
	for {
		raw, cmd, err := readRESP(r)
		if err != nil {
			return
		}
		rule := p.take(cmd)
		if rule != nil && rule.sendAfter != nil {
			select {
			case <-rule.sendAfter:
			case <-p.stop:
				return
			}
		}
		// Queued before the command is sent, so before its reply can arrive.
		q.push(rule)
		if !p.hole.pass(p.stop) {
			return
		}
		if _, err := server.Write(raw); err != nil {
			return
		}
		if rule != nil && rule.answered != nil {
			// Its client may have hung up: the server's end closes (on
			// the client's EOF) only once the reply has come.
			select {
			case <-rule.answered:
			case <-p.stop:
				return
			}
		}
	}
}

func (p *proxy) forwardReplies(server, client net.Conn, q *replyQueue, hangUp func()) {
	r := bufio.NewReader(server)
	for {
		raw, _, err := readRESP(r)
		if err != nil {
			return
		}
		// RESP3 pushes (pub/sub messages) answer no command.
		if raw[0] != '>' {
			switch rule := q.pop(); {
			case rule == nil:
			case rule.answered != nil:
				close(rule.answered)
			case rule.held != nil:
				select {
				case <-rule.held:
				case <-p.stop:
					return
				}
			default:
				p.dropped.Add(1)
				if rule.hangUp {
					hangUp()
					return
				}
				continue
			}
		}
		if !p.hole.pass(p.stop) || !p.replies.pass(p.stop) {
			return
		}
		if _, err := client.Write(raw); err != nil {
			return
		}
	}
}

// take returns the armed rule if cmd matches it, disarming it.
func (p *proxy) take(cmd []string) *dropRule {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rule == nil || len(cmd) == 0 || !p.rule.match(cmd) {
		return nil
	}
	r := p.rule
	p.rule = nil
	return r
}

// replyQueue holds, per command sent and not yet answered, the drop rule
// that claimed its reply (nil for most). On a pub/sub connection the
// commands and replies do not pair up, but nothing there is ever dropped.
type replyQueue struct {
	mu    sync.Mutex
	rules []*dropRule
}

func (q *replyQueue) push(r *dropRule) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.rules = append(q.rules, r)
}

func (q *replyQueue) pop() *dropRule {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.rules) == 0 {
		return nil
	}
	r := q.rules[0]
	q.rules = q.rules[1:]
	return r
}

// readRESP reads one RESP2 or RESP3 value and returns its bytes and, for an
// array of bulk strings such as a command, the strings (the name lowered).
func readRESP(r *bufio.Reader) (raw []byte, strs []string, err error) {
	var buf []byte
	strs, err = readValue(r, &buf)
	if len(strs) > 0 {
		strs[0] = strings.ToLower(strs[0])
	}
	return buf, strs, err
}

func readValue(r *bufio.Reader, buf *[]byte) ([]string, error) {
	line, err := r.ReadBytes('\n')
	if err != nil {
		return nil, err
	}
	*buf = append(*buf, line...)
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("proxy: bad RESP line %q", line)
	}
	kind, body := line[0], string(line[1:len(line)-2])
	switch kind {
	case '+', '-', ':', ',', '#', '(', '_':
		return nil, nil
	case '$', '!', '=': // bulk string, bulk error, verbatim string
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		data := make([]byte, n+2)
		if _, err := io.ReadFull(r, data); err != nil {
			return nil, err
		}
		*buf = append(*buf, data...)
		return []string{string(data[:n])}, nil
	case '*', '~', '>', '%', '|': // array, set, push, map, attribute
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		if kind == '%' || kind == '|' {
			n *= 2
		}
		var strs []string
		for i := 0; i < n; i++ {
			s, err := readValue(r, buf)
			if err != nil {
				return nil, err
			}
			strs = append(strs, s...)
		}
		if kind == '|' { // attributes come before the value they describe
			return readValue(r, buf)
		}
		return strs, nil
	}
	return nil, errors.New("proxy: unknown RESP type " + strconv.Quote(string(kind)))
}

// scriptShapes tells the baton scripts apart by their numbers of keys and
// of arguments. "renew-2" is a renewal of two holds of one slot;
// "acquire" is a Lock's first try, which passes no waiter and, for an
// owner made for the call, no request key (see acquire.lua).
var scriptShapes = map[string][2]int{
	"acquire": {4, 6}, "release": {5, 4}, "force-release": {5, 3}, "renew-2": {4, 7}, "quorum-raise": {3, 5},
	"rw-acquire": {6, 13}, "rw-release": {6, 6}, "rw-leave": {5, 6}, "rw-force-release": {6, 3},
}

// isScript matches an EVALSHA or EVAL of the named baton script.
func isScript(name string) func(cmd []string) bool {
	shape := scriptShapes[name]
	return func(cmd []string) bool {
		if (cmd[0] != "evalsha" && cmd[0] != "eval") || len(cmd) < 3 {
			return false
		}
		keys, err := strconv.Atoi(cmd[2])
		return err == nil && keys == shape[0] && len(cmd) == 3+shape[0]+shape[1]
	}
}
