package rlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultReplicaAckTimeout is how long a grant waits for a replica's
// acknowledgement by default, where the master has replicas.
const DefaultReplicaAckTimeout = time.Second

// replicaRecheck is how long the default's count of a master's replicas
// is trusted: a master found after a failover or a reconnect is asked again
// within it. An old count of 0 is read again before the grant that finds
// it is served, since a replica that connected since would otherwise never
// be waited for and a failover could give two holders. An old count of 1
// or more is safe to serve and is read again in the background: its WAIT
// fails if the replicas went away, which forgets the count, so the next
// grant reads it first.
const replicaRecheck = time.Second

// ackKeyTTL is how long the key written by an acknowledgement lasts: it
// only has to move the replication stream past the grant.
const ackKeyTTL = 10 * time.Second

// WithReplicaAcks makes a hold count only once at least n replicas of the
// master have acknowledged the writes that made or extended it, within
// timeout: a free acquire, a re-entry, a hand-off grant and every renewal.
// timeout must be below the Redis client's ReadTimeout, which bounds
// WAIT's reply; the default's is DefaultReplicaAckTimeout, or half the
// ReadTimeout if that is less.
// A grant not acknowledged in time is given back, and Lock returns an
// error matching ErrNotObtained and ErrNotReplicated; a renewal not
// acknowledged does not extend the hold's validity. WithReplicaAcks(0, 0)
// turns acknowledgements off. Without the option, a client waits for one
// acknowledgement within DefaultReplicaAckTimeout wherever the master
// reports connected replicas (INFO replication, asked again every second),
// and for none elsewhere; where the server refuses WAIT (an unknown
// command, or an ACL without +wait) the default turns itself off and says
// so once through WithLogger's logger, while an explicit n > 0 makes New
// fail with ErrReplicaAcksUnsupported. WAIT is not consensus: see
// "Replica acknowledgements" in the README for what it does not cover.
func WithReplicaAcks(n int, timeout time.Duration) Option {
	return func(c *config) { c.acks = ackConfig{n: n, timeout: timeout, set: true} }
}

// ackConfig is WithReplicaAcks's arguments; without set, the default.
type ackConfig struct {
	n       int
	timeout time.Duration
	set     bool
}

func (a ackConfig) validate() error {
	if a.n < 0 || a.timeout < 0 || (a.n > 0 && a.timeout <= 0) {
		return fmt.Errorf("%w: WithReplicaAcks(%d, %v) needs n >= 0, and a positive timeout when n > 0", ErrInvalidOption, a.n, a.timeout)
	}
	return nil
}

// replicaAcks has the writes that make or extend holds acknowledged by
// replicas: after the script, one pipeline on the same master writes a
// key in the hold's slot and sends WAIT. Replication is ordered, so a
// replica that has the key has every earlier write of the master,
// whichever connection made it: the grant itself, a hand-off grant the
// releaser's script made, or the first run of a resent script. A nil
// replicaAcks acknowledges nothing.
type replicaAcks struct {
	rdb     redis.UniversalClient
	n       int // explicit: the replicas to wait for; 0: the default's
	timeout time.Duration
	logger  *slog.Logger
	off     atomic.Bool // the default found WAIT refused
	// background runs the default's re-reads of a count, off the grant
	// path: the client's clean-ups, which Close waits for.
	background *cleanups
	mu         sync.Mutex // guards replicas
	replicas   map[string]replicaCount
}

// replicaCount is the default's count of one master's replicas and when
// it was read (zero: no count yet), and whether a read of it is under way.
type replicaCount struct {
	n       int64
	readAt  time.Time
	reading bool
}

// newReplicaAcks is the acknowledgements cfg asks for on rdb, nil for
// none. An explicit n > 0 asks the server whether it takes WAIT, once.
func newReplicaAcks(rdb redis.UniversalClient, cfg config) (*replicaAcks, error) {
	a := cfg.acks
	if a.set && a.n == 0 {
		return nil, nil
	}
	r := &replicaAcks{rdb: rdb, n: a.n, timeout: a.timeout, logger: cfg.logger, replicas: map[string]replicaCount{}}
	read := readTimeout(rdb)
	if !a.set {
		r.timeout = DefaultReplicaAckTimeout
		if read > 0 {
			r.timeout = min(r.timeout, read/2)
		}
		return r, nil
	}
	if read > 0 && a.timeout >= read {
		return nil, fmt.Errorf("%w: WithReplicaAcks(%d, %v): the timeout must be below the client's ReadTimeout (%v), which bounds the reply to WAIT",
			ErrInvalidOption, a.n, a.timeout, read)
	}
	ctx, cancel := context.WithTimeout(context.Background(), undoTimeout)
	defer cancel()
	if err := rdb.Do(ctx, "wait", 0, 0).Err(); refuses(err) {
		return nil, fmt.Errorf("%w: WithReplicaAcks(%d, %v): %w", ErrReplicaAcksUnsupported, a.n, a.timeout, err)
	}
	return r, nil
}

// readTimeout is rdb's ReadTimeout: how long go-redis waits for a
// pipeline's replies, WAIT's included; 0 or less for no bound.
func readTimeout(rdb redis.UniversalClient) time.Duration {
	switch c := rdb.(type) {
	case *redis.Client:
		return c.Options().ReadTimeout
	case *redis.ClusterClient:
		return c.Options().ReadTimeout
	}
	return 0
}

// refuses reports whether err is a server's refusal of a command
// acknowledgements need (WAIT, INFO replication): it does not know it, or
// the user may not run it.
func refuses(err error) bool {
	var reply redis.Error
	if !errors.As(err, &reply) {
		return false
	}
	msg := reply.Error()
	return strings.HasPrefix(msg, "NOPERM") || strings.Contains(msg, "unknown command") ||
		strings.Contains(msg, "not supported")
}

// replicated returns once the master of key has had the writes made so far
// acknowledged as asked, or says why not: an error matching
// ErrNotReplicated when too few replicas acknowledged in time, or the
// Redis error.
func (r *replicaAcks) replicated(ctx context.Context, key string) error {
	if r == nil || r.off.Load() {
		return nil
	}
	node, addr, err := r.master(ctx, key)
	if err != nil {
		return err
	}
	return r.replicatedAt(ctx, node, addr, key)
}

// replicatedAt is replicated on key's master node, at addr.
func (r *replicaAcks) replicatedAt(ctx context.Context, node *redis.Client, addr, key string) error {
	n, err := r.wanted(ctx, node, addr)
	if err != nil || n == 0 {
		return err
	}
	pipe := node.Pipeline()
	pipe.Set(ctx, ackKey(key), 1, ackKeyTTL)
	// WAIT's timeout ends before go-redis's read timeout does, which
	// bounds the pipeline's replies (see newReplicaAcks).
	wait := pipe.Do(ctx, "wait", n, r.timeout.Milliseconds())
	_, _ = pipe.Exec(ctx)
	got, err := wait.Int64()
	switch {
	case err == nil && got >= int64(n):
		return nil
	case err == nil:
		err = fmt.Errorf("%w: %d of %d replicas acknowledged within %v", ErrNotReplicated, got, n, r.timeout)
	case r.n == 0 && refuses(err):
		r.turnOff(err)
		return nil
	}
	r.forget(addr)
	return err
}

// master is the client of the master that holds key, and its address.
func (r *replicaAcks) master(ctx context.Context, key string) (*redis.Client, string, error) {
	if cc, ok := r.rdb.(*redis.ClusterClient); ok {
		node, err := cc.MasterForKey(ctx, key)
		if err != nil {
			return nil, "", err
		}
		return node, node.Options().Addr, nil
	}
	node := r.rdb.(*redis.Client) // New admits nothing else
	return node, node.Options().Addr, nil
}

// wanted is how many acknowledgements to wait for on node: the explicit
// count, or one where the master reports replicas.
func (r *replicaAcks) wanted(ctx context.Context, node *redis.Client, addr string) (int, error) {
	if r.n > 0 {
		return r.n, nil
	}
	r.mu.Lock()
	c := r.replicas[addr]
	r.mu.Unlock()
	switch {
	case c.readAt.IsZero(), c.n == 0 && time.Since(c.readAt) >= replicaRecheck:
		return r.read(ctx, node, addr) // see replicaRecheck
	case time.Since(c.readAt) >= replicaRecheck:
		// The count in hand serves this grant: a grant message must make
		// its handle without another round trip.
		r.readLater(node, addr)
	}
	return int(min(c.n, 1)), nil
}

// read reads how many replicas the master node at addr has, records it,
// and returns how many acknowledgements the default waits for there.
func (r *replicaAcks) read(ctx context.Context, node *redis.Client, addr string) (int, error) {
	info, err := node.Info(ctx, "replication").Result()
	if refuses(err) {
		r.turnOff(err) // a server that cannot tell its replicas
		return 0, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		delete(r.replicas, addr) // read again by the next grant
		return 0, err
	}
	n := connectedReplicas(info)
	r.replicas[addr] = replicaCount{n: n, readAt: time.Now()}
	return int(min(n, 1)), nil
}

// readLater reads the default's count of the replicas of the master node
// at addr in the background, unless a read of it is under way.
func (r *replicaAcks) readLater(node *redis.Client, addr string) {
	r.mu.Lock()
	c := r.replicas[addr]
	start := !c.reading
	c.reading = true
	r.replicas[addr] = c
	r.mu.Unlock()
	if start {
		r.background.run(undoTimeout, func(ctx context.Context) { _, _ = r.read(ctx, node, addr) })
	}
}

// warm reads, in the background, the default's count of the replicas of
// key's master where none is known: a call about to wait warms it, so
// that its grant, which may come by message, finds the count and makes
// its handle with no further round trip.
func (r *replicaAcks) warm(ctx context.Context, key string) {
	if r == nil || r.n > 0 || r.off.Load() {
		return
	}
	node, addr, err := r.master(ctx, key)
	if err != nil {
		return // the grant reads it
	}
	r.mu.Lock()
	_, known := r.replicas[addr]
	r.mu.Unlock()
	if !known {
		r.readLater(node, addr)
	}
}

// runIn makes bg run r's re-reads of a count. It sends nothing: New
// dials no server (go-redis's constructors do not either, and a client
// may be made before its server is up), so the first grant on a master
// reads its count.
func (r *replicaAcks) runIn(bg *cleanups) {
	if r != nil {
		r.background = bg
	}
}

// reconnected forgets every count, once a pub/sub connection of the client
// came back: a failover or a restart may have changed the master. A
// single master's count is read again at once, in the background; a
// cluster master's by its next grant.
func (r *replicaAcks) reconnected() {
	if r == nil {
		return
	}
	r.mu.Lock()
	clear(r.replicas)
	r.mu.Unlock()
	if node, ok := r.rdb.(*redis.Client); ok && r.n == 0 {
		r.readLater(node, node.Options().Addr)
	}
}

// connectedReplicas reads connected_slaves from INFO replication; 0 where
// it is missing (a replica, which takes no grant).
func connectedReplicas(info string) int64 {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_slaves:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// forget drops the count of addr's replicas after a failed
// acknowledgement: a failover or a lost replica may have changed it.
func (r *replicaAcks) forget(addr string) {
	r.mu.Lock()
	delete(r.replicas, addr)
	r.mu.Unlock()
}

// turnOff turns the default's acknowledgements off for good, for a server
// that refuses WAIT or INFO replication, and says so once.
func (r *replicaAcks) turnOff(cause error) {
	if r.off.Swap(true) || r.logger == nil {
		return
	}
	r.logger.Warn("rlock: the server refuses WAIT or INFO replication: replica acknowledgements are off", "cause", cause)
}

// ackKey is the key an acknowledgement of a hold on key writes: in key's
// slot, so that it goes to the same master. A key without a hash tag
// hashes whole, which the braces keep.
func ackKey(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key + ":ack"
		}
	}
	return "{" + key + "}:ack"
}
