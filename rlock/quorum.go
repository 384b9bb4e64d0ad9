package rlock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	// ErrQuorumUnsupported: a call a Client made by NewQuorum does not
	// support: RWLock's and Semaphore's calls, lock sets (LockAll,
	// TryLockAll, DoAll), and, for NewQuorum itself,
	// WithRedissonWire and WithReplicaAcks.
	ErrQuorumUnsupported = errors.New("rlock: not supported in quorum mode")

	// ErrInvalidQuorum: NewQuorum was given fewer than 3 nodes, a nil
	// client, one node twice (one server by two addresses too), or an
	// address whose host does not resolve. It matches ErrInvalidOption.
	ErrInvalidQuorum = fmt.Errorf("%w: invalid quorum", ErrInvalidOption)

	// ErrNoQuorum: in quorum mode, too few nodes answered for a majority
	// to take, renew or release the lock; the error names the nodes that
	// did not. A Lock or TryLock that fails with it has given back what
	// it took on the nodes that did. Where a node failed by refusing at
	// the end of the token range, it matches ErrTokenOverflow too.
	ErrNoQuorum = errors.New("rlock: no majority of the quorum's nodes answered")
)

// minQuorum is the fewest nodes a quorum has: with 2, losing either stops
// every lock, which a single node does at half the cost.
const minQuorum = 3

// quorum is a quorum client's nodes: one Client of its own per
// independent Redis master, of which a majority makes every hold. The
// nodes' Clients give their scripts, their grant lines and their
// clean-ups of unclaimed grants; their tables and watchdogs stay empty, as
// the quorum client's own hold every hold (see "Quorum mode" in
// reentrant's doc and quorum_lock.go).
type quorum struct {
	nodes    []*Client
	names    []string // each node's address, for errors
	majority int      // ⌊N/2⌋+1
}

// NewQuorum returns a Client whose locks span nodes, independent Redis
// masters (any client New accepts), each taken on a majority of them
// (⌊N/2⌋+1): it goes on working while a minority is down or paused. Its
// Lock, TryLock, Do, Inspect, ForceUnlock, re-entry through a handle's
// Context, Token and Context are those of a Client on one node; RWLock,
// Semaphore and lock set (LockAll, TryLockAll, DoAll) calls fail with
// ErrQuorumUnsupported.
//
// Tokens are strictly increasing from holder to holder, with no
// assumption about the nodes' clocks, as long as no node loses its
// counters (see "Quorum mode" in package reentrant's documentation:
// appendfsync always, or a node restarted without data kept out for a
// lease and clocks within a lease of each other).
//
// opts apply to every node's Client and to the quorum's watchdog.
// It returns ErrInvalidQuorum for fewer than 3 nodes, a nil client or a
// node given twice: the same client, or one server by two addresses, told
// by what each address's host resolves to now (127.0.0.1:p and
// localhost:p are one; a lookup dials nothing, and a host that does not
// resolve is refused too; aliases no lookup sees, such as a proxy in front
// of a server, are not), and
// ErrQuorumUnsupported for WithRedissonWire or WithReplicaAcks; the
// caller still owns the nodes' clients and closes them after Close.
func NewQuorum(nodes []redis.UniversalClient, opts ...Option) (*Client, error) {
	names, err := quorumNames(nodes)
	if err != nil {
		return nil, err
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if cfg.wire || cfg.acks.set {
		return nil, fmt.Errorf("%w: WithRedissonWire and WithReplicaAcks: a quorum's majority is its redundancy", ErrQuorumUnsupported)
	}
	q := &quorum{names: names, majority: len(nodes)/2 + 1}
	for _, rdb := range nodes {
		n, err := New(rdb, opts...)
		if err != nil {
			_ = q.close()
			return nil, err
		}
		q.nodes = append(q.nodes, n)
	}
	c := &Client{cfg: cfg, ns: q.nodes[0].ns, id: randomHex(8), quorum: q}
	if err := c.startWatchdog(); err != nil {
		_ = q.close()
		return nil, err
	}
	return c, nil
}

// quorumNames names each of nodes by its address, or says why nodes are no
// quorum (ErrInvalidQuorum). Two clients of one server are one node,
// whatever their other options (a database number is no independent
// master): a server is told by the endpoints its address resolves to
// (nodeEndpoints), so 127.0.0.1:p and localhost:p are one. A Sentinel
// client, whose address is its master's name, is told apart by identity
// alone.
func quorumNames(nodes []redis.UniversalClient) ([]string, error) {
	if len(nodes) < minQuorum {
		return nil, fmt.Errorf("%w: %d nodes, at least %d needed", ErrInvalidQuorum, len(nodes), minQuorum)
	}
	names := make([]string, len(nodes))
	type first struct {
		node int
		addr string
	}
	seen := map[string]first{}
	for i, rdb := range nodes {
		if _, err := clientKind(rdb); err != nil {
			return nil, fmt.Errorf("%w: node %d: %w", ErrInvalidQuorum, i, err)
		}
		addrs, network := nodeAddrs(rdb)
		names[i] = strings.Join(addrs, ",")
		for _, a := range addrs {
			eps, err := nodeEndpoints(network, a)
			if err != nil {
				return nil, fmt.Errorf("%w: node %d (%s): %w", ErrInvalidQuorum, i, a, err)
			}
			for _, ep := range eps {
				if f, ok := seen[ep]; ok && f.node != i {
					return nil, fmt.Errorf("%w: node %d (%s) and node %d (%s) are one server, at %s",
						ErrInvalidQuorum, f.node, f.addr, i, a, ep)
				}
				seen[ep] = first{i, a}
			}
		}
	}
	return names, nil
}

// nodeAddrs is what tells node rdb apart from the others: the addresses
// it connects to and their network ("tcp", "unix"), or, for a Sentinel
// client, its identity and no network.
func nodeAddrs(rdb redis.UniversalClient) (addrs []string, network string) {
	switch c := rdb.(type) {
	case *redis.Client:
		if addr := c.Options().Addr; addr != "FailoverClient" {
			return []string{addr}, c.Options().Network
		}
	case *redis.ClusterClient:
		return c.Options().Addrs, "tcp"
	}
	return []string{fmt.Sprintf("%T@%p", rdb, rdb)}, ""
}

// resolveTimeout bounds the lookup of one node's host: go-redis's default
// dial timeout, of which the lookup is the first step.
const resolveTimeout = 5 * time.Second

// nodeEndpoints is where addr, of network (see nodeAddrs), reaches a
// server: every IP and port its host resolves to now (by
// net.DefaultResolver; nothing is dialled), a Unix socket's path, or, for
// a Sentinel client's identity (no network), addr itself. Aliases a
// lookup cannot see (a server's other interfaces, a proxy or NAT in front
// of it) stay unseen. A host that does not resolve is an error: the node
// could not be told apart from the others.
func nodeEndpoints(network, addr string) ([]string, error) {
	switch network {
	case "":
		return []string{addr}, nil
	case "unix":
		return []string{"unix:" + filepath.Clean(addr)}, nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if host == "" {
		host = "localhost" // net.Dial's reading of ":port"
	}
	ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
	defer cancel()
	p, err := net.DefaultResolver.LookupPort(ctx, "tcp", port)
	if err != nil {
		return nil, err
	}
	ips := []netip.Addr{}
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = append(ips, ip)
	} else if ips, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host); err != nil {
		return nil, err
	}
	eps := make([]string, len(ips))
	for i, ip := range ips {
		eps[i] = netip.AddrPortFrom(ip.Unmap(), uint16(p)).String()
	}
	return eps, nil
}

// answerWithin is how long a call waits for node i's answer where the
// others may decide without it (a look, a subscription): its client's read
// timeout, at least 1 s. A node that has not answered by then (paused, or
// cut off) has failed for that call, however long go-redis's retries of
// the command would go on.
func (q *quorum) answerWithin(i int) time.Duration {
	return max(readTimeout(q.nodes[i].rdb), time.Second)
}

// closeHubs begins to close every node's hub, side by side, and returns a
// wait for them all: a quorum call waits on the nodes' subscriptions, so
// this is what wakes the quorum's waiting calls with ErrClosed as Close
// begins, as a Client of one deployment's hub does. A hub closes only once
// a subscribe under way on its node has ended (up to the node's read
// timeout where it is paused), so none waits for another, nor does Close
// for them before its releases. A nil quorum has none.
func (q *quorum) closeHubs() (wait func()) {
	var wg sync.WaitGroup
	if q != nil {
		for _, n := range q.nodes {
			wg.Go(func() { _ = n.hub.Close() })
		}
	}
	return wg.Wait
}

// close closes every node's Client; a nil quorum (a Client of one
// deployment) has none.
func (q *quorum) close() error {
	if q == nil {
		return nil
	}
	var err error
	for _, n := range q.nodes {
		err = errors.Join(err, n.Close())
	}
	return err
}

// unreachable is ErrNoQuorum for the nodes in errs (node → its error),
// naming each. A node's refusal at the end of the token range stays
// wrapped, so that the error matches ErrTokenOverflow too, as every
// refusing script's error does.
func (q *quorum) unreachable(name string, errs map[int]error) error {
	format, args := "%w: %q", []any{ErrNoQuorum, name}
	for i := range q.nodes {
		if err, ok := errs[i]; ok {
			verb := "%v"
			if errors.Is(err, ErrTokenOverflow) {
				verb = "%w"
			}
			format += "; node %d (%s): " + verb
			args = append(args, i, q.names[i], err)
		}
	}
	return fmt.Errorf(format, args...)
}
