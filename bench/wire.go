package bench

import (
	"context"
	"net"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// commandCounter counts the commands clients write to their connections,
// pub/sub and handshakes included. It counts on the wire because go-redis's
// process hooks never see the commands of a PubSub.
type commandCounter struct {
	n     atomic.Int64 // commands
	dials atomic.Int64 // connections dialed, each with its handshake's commands in n
}

// attach makes every connection rdb dials from now on count into c. A
// cluster client dials through one client per node, so the hook goes there.
func (c *commandCounter) attach(rdb redis.UniversalClient) {
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		cc.OnNewNode(func(node *redis.Client) { node.AddHook(c) })
		return
	}
	rdb.AddHook(c)
}

// DialHook wraps each new connection so that its writes are counted.
func (c *commandCounter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c.dials.Add(1)
		return c.wrap(conn), nil
	}
}

// wrap counts the commands written to conn into c.
func (c *commandCounter) wrap(conn net.Conn) net.Conn {
	return &countingConn{Conn: conn, total: &c.n}
}

// ProcessHook leaves commands alone; they are counted on the wire.
func (c *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

// ProcessPipelineHook leaves pipelines alone; they are counted on the wire.
func (c *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

type countingConn struct {
	net.Conn
	total *atomic.Int64

	// go-redis writes one command at a time per connection, but does not
	// promise it; the parser's place in the stream must never be shared.
	mu     sync.Mutex
	parser respWriteParser
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.total.Add(c.parser.feed(p))
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// respWriteParser counts the commands in a stream of client-to-server RESP,
// which is always an array of bulk strings per command:
// "*<n>\r\n" then n times "$<len>\r\n<len bytes>\r\n". Writes may split the
// stream anywhere, so it keeps its place between calls.
type respWriteParser struct {
	state int   // one of the parse* constants
	num   int64 // the number being read from a header line
	args  int64 // bulk strings left in the current command
	skip  int64 // body bytes left, CRLF included
}

const (
	parseArrayHeader = iota
	parseBulkHeader
	parseBulkBody
)

// feed consumes p and returns how many commands started in it.
func (r *respWriteParser) feed(p []byte) (commands int64) {
	for i := 0; i < len(p); {
		if r.state == parseBulkBody {
			n := min(r.skip, int64(len(p)-i))
			i += int(n)
			if r.skip -= n; r.skip == 0 {
				r.endArg()
			}
			continue
		}
		b := p[i]
		i++
		switch {
		case b >= '0' && b <= '9':
			r.num = 10*r.num + int64(b-'0')
		case b != '\n':
			// '*', '$' and '\r' frame the number.
		case r.state == parseArrayHeader:
			commands++
			r.args, r.num, r.state = r.num, 0, parseBulkHeader
			if r.args == 0 {
				r.state = parseArrayHeader
			}
		default:
			r.skip, r.num, r.state = r.num+2, 0, parseBulkBody
		}
	}
	return commands
}

func (r *respWriteParser) endArg() {
	r.args--
	r.state = parseBulkHeader
	if r.args == 0 {
		r.state = parseArrayHeader
	}
}
