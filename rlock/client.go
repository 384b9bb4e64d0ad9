package rlock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/notify"
	"github.com/batonlock/baton/reentrant"
	"github.com/batonlock/baton/watchdog"
)

// closeTimeout bounds the best-effort release of held locks in Close.
const closeTimeout = 2 * time.Second

// Client takes locks on one Redis deployment. It owns one pub/sub hub (one
// shared connection, or one per master on a cluster), one watchdog, and
// the table of the holds it has. A Client is safe for concurrent use;
// create one per process and Close it.
type Client struct {
	rdb redis.UniversalClient
	cfg config
	ns  reentrant.Namespace
	id  string // prefix of every owner ID this client makes (owner.go)
	// wire is set with WithRedissonWire: the client's locks are in
	// Redisson's format, not ns's.
	wire *wireMode
	// acks has holds acknowledged by replicas; nil: not.
	acks *replicaAcks
	// quorum is set by NewQuorum: the client's locks span its nodes, each
	// a Client of its own, and it has no Redis client, hub or grant line
	// of its own (quorum.go).
	quorum *quorum

	hub    *notify.Hub
	grants grantLine // the grant line: where its waiters' grants arrive
	wd     *watchdog.Scheduler[*hold]

	table      holdTable // the holds this client has
	background cleanups  // clean-ups of failed calls and dead grants; Close waits for them
	closeOnce  sync.Once
}

// The test seams: package-level, so that Client holds no test-only state.
// They are no-ops; export_test.go replaces them before any test runs, with
// functions that run the hook a test set for that Client.
var (
	// afterFirstAttempt runs in c's wait loop between the first failed
	// acquire and the subscribe.
	afterFirstAttempt = func(c *Client) {}
	// beforeJoin runs in c's adopt between finding the hold to join and
	// joining it.
	beforeJoin = func(c *Client) {}
)

// New returns a Client that takes locks on rdb: a *redis.Client (a single
// node, or Sentinel through redis.NewFailoverClient) or a
// *redis.ClusterClient (a Redis Cluster, or Sentinel through
// redis.NewFailoverClusterClient). With Sentinel, waiters' liveness is
// judged by key (see WithLivenessTTL), and a NewFailoverClusterClient uses
// classic pub/sub, as a NewFailoverClient does. The caller still owns rdb and closes it after
// Client.Close. It returns ErrNilClient for a nil client (typed or not) and
// ErrUnsupportedClient for any other kind, such as a *redis.Ring.
func New(rdb redis.UniversalClient, opts ...Option) (*Client, error) {
	isCluster, err := clientKind(rdb)
	if err != nil {
		return nil, err
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	exact := countsExact(rdb) && !cfg.livenessKeys
	sharded := isCluster && exact && !cfg.classicPubSub
	ns := reentrant.Namespace{
		Prefix:             cfg.prefix,
		Sharded:            sharded,
		ReceiversElsewhere: !exact || (isCluster && !sharded),
		AliveTTL:           cfg.aliveTTL,
		RequestTTL:         requestTTL(rdb),
	}
	var wire *wireMode
	if cfg.wire {
		if wire, err = newWireMode(cfg, isCluster, sharded); err != nil {
			return nil, err
		}
	} else if _, err := ns.Keys("probe"); err != nil {
		return nil, lower(err)
	}
	acks, err := newReplicaAcks(rdb, cfg)
	if err != nil {
		return nil, err
	}
	mode := notify.Classic
	if sharded {
		mode = notify.Sharded
	}
	c := &Client{rdb: rdb, cfg: cfg, ns: ns, id: randomHex(8), wire: wire, acks: acks, grants: grantLine{perLock: sharded}}
	acks.runIn(&c.background)
	hub, err := notify.New(rdb, notify.Options{Mode: mode, Unclaimed: c.unclaimedGrant, Resubscribed: c.checkHolds})
	if err != nil {
		return nil, lower(err)
	}
	c.hub = hub
	if err := c.startWatchdog(); err != nil {
		_ = hub.Close()
		return nil, err
	}
	return c, nil
}

// startWatchdog makes the client's watchdog, which renews its holds in
// batches with c.renew.
func (c *Client) startWatchdog() error {
	wdc := watchdog.Config[*hold]{
		Lease:     c.cfg.watchdogLease,
		Margin:    driftMargin(c.cfg.watchdogLease),
		BatchSize: c.cfg.renewBatchSize,
		Renew:     c.renew,
		OnRenewed: extendHold,
	}
	if c.cfg.observer.Renewed != nil {
		wdc.OnRound = c.renewalRound
	}
	var err error
	c.wd, err = watchdog.New(wdc)
	return err
}

// Close wakes every waiting Lock call with ErrClosed, stops the watchdog,
// releases the locks this client still holds (best effort, bounded in time)
// and ends their contexts with ErrClosed. It also waits for the clean-ups
// still going on in the background (give-backs of failed calls and of
// grants nobody took, which retry while Redis is unreachable), up to the
// same bound, then cancels those left: what they would have given back
// ends with its lease. A call already under way when Close began runs its
// own clean-ups, side by side, and waits for them up to a second; one
// whose server has not answered by then (go-redis ends a read at its
// ReadTimeout, not at a context's deadline, unless ContextTimeoutEnabled
// is set) goes on alone, and Close waits for it, within the same bound,
// as long as Close has not returned. It does not close the Redis client.
// Close is idempotent.
func (c *Client) Close() error {
	var err error
	c.closeOnce.Do(func() {
		holds := c.table.close() // no hold is added to the table after this
		c.background.stop()
		if c.hub != nil {
			err = lower(c.hub.Close())
		}
		hubsClosed := c.quorum.closeHubs()
		var held []*handle
		for _, h := range holds {
			held = append(held, h.cutOff(ErrClosed)...)
		}
		err = errors.Join(err, lower(c.wd.Close()))
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		for _, l := range held {
			h := l.hold
			_, _ = h.res.release(ctx, h.owner, h.id, l.unlockReq)
		}
		c.background.wait(ctx)
		c.background.waitLate(ctx)
		hubsClosed()
		err = errors.Join(err, c.quorum.close())
	})
	return err
}

// checkOpen guards every public call that sends to Redis: it is ErrClosed
// once Close has begun. A call that passed it as Close began meets the end
// further on: the hub, the watchdog and the holds table refuse it.
func (c *Client) checkOpen() error {
	if c.table.closed.Load() {
		return ErrClosed
	}
	return nil
}

// randomHex is n random bytes from crypto/rand, in hex. crypto/rand.Read
// never fails (since Go 1.24 it crashes the program instead).
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
