package rlock

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	// ErrQuorumUnsupported: a call a Client made by NewQuorum does not
	// support: RWLock's and Semaphore's calls, and, for NewQuorum itself,
	// WithRedissonWire and WithReplicaAcks.
	ErrQuorumUnsupported = errors.New("rlock: not supported in quorum mode")

	// ErrInvalidQuorum: NewQuorum was given fewer than 3 nodes, a nil
	// client, or one node twice. It matches ErrInvalidOption.
	ErrInvalidQuorum = fmt.Errorf("%w: invalid quorum", ErrInvalidOption)

	// ErrNoQuorum: in quorum mode, too few nodes answered for a majority
	// to take, renew or release the lock; the error names the nodes that
	// did not. A Lock or TryLock that fails with it has given back what
	// it took on the nodes that did.
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
// Context, Token and Context are those of a Client on one node; RWLock
// and Semaphore calls fail with ErrQuorumUnsupported.
//
// Tokens are strictly increasing from holder to holder, with no
// assumption about the nodes' clocks, as long as no node loses its
// counters (see "Quorum mode" in package reentrant's documentation:
// appendfsync always, or a node restarted without data kept out for a
// lease and clocks within a lease of each other).
//
// opts apply to every node's Client and to the quorum's watchdog.
// It returns ErrInvalidQuorum for fewer than 3 nodes, a nil client or a
// node given twice (the same address, or the same client), and
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
// quorum (ErrInvalidQuorum). Two clients of one address are one node,
// whatever their other options (a database number is no independent
// master); a Sentinel client, whose address is its master's name, is
// told apart by identity alone.
func quorumNames(nodes []redis.UniversalClient) ([]string, error) {
	if len(nodes) < minQuorum {
		return nil, fmt.Errorf("%w: %d nodes, at least %d needed", ErrInvalidQuorum, len(nodes), minQuorum)
	}
	names := make([]string, len(nodes))
	seen := map[string]int{}
	for i, rdb := range nodes {
		if _, err := clientKind(rdb); err != nil {
			return nil, fmt.Errorf("%w: node %d: %w", ErrInvalidQuorum, i, err)
		}
		addrs := nodeAddrs(rdb)
		names[i] = strings.Join(addrs, ",")
		for _, a := range addrs {
			if j, ok := seen[a]; ok {
				return nil, fmt.Errorf("%w: nodes %d and %d are both %s", ErrInvalidQuorum, j, i, a)
			}
			seen[a] = i
		}
	}
	return names, nil
}

// nodeAddrs is what tells node rdb apart from the others: the addresses
// it connects to, or, for a Sentinel client, its identity.
func nodeAddrs(rdb redis.UniversalClient) []string {
	switch c := rdb.(type) {
	case *redis.Client:
		if addr := c.Options().Addr; addr != "FailoverClient" {
			return []string{addr}
		}
	case *redis.ClusterClient:
		return c.Options().Addrs
	}
	return []string{fmt.Sprintf("%T@%p", rdb, rdb)}
}

// answerWithin is how long a call waits for node i's answer where the
// others may decide without it (a look, a subscription): its client's read
// timeout, at least 1 s. A node that has not answered by then (paused, or
// cut off) has failed for that call, however long go-redis's retries of
// the command would go on.
func (q *quorum) answerWithin(i int) time.Duration {
	return max(readTimeout(q.nodes[i].rdb), time.Second)
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
// naming each.
func (q *quorum) unreachable(name string, errs map[int]error) error {
	var b strings.Builder
	for i := range q.nodes {
		if err, ok := errs[i]; ok {
			fmt.Fprintf(&b, "; node %d (%s): %v", i, q.names[i], err)
		}
	}
	return fmt.Errorf("%w: %q%s", ErrNoQuorum, name, b.String())
}
