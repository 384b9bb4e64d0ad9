package rlock_test

// Helpers of the outside attacks (attack_*_test.go): public API and
// bench/redistest only, issue 30 follow-up.

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/bench/relay"
	"github.com/batonlock/baton/rlock"
)

func atkCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func atkClient(t *testing.T, srv *redistest.Server, opts ...rlock.Option) *rlock.Client {
	t.Helper()
	c, err := rlock.New(srv.Client(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// atkUnclosed is a Client the test closes itself (no Close at cleanup).
func atkUnclosed(t *testing.T, srv *redistest.Server, opts ...rlock.Option) *rlock.Client {
	t.Helper()
	c, err := rlock.New(srv.Client(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func atkWaitLen(t *testing.T, rdb *redis.Client, key string, n int64) {
	t.Helper()
	atkAwait(t, fmt.Sprintf("%s reaches length %d", key, n), func() bool { return rdb.LLen(context.Background(), key).Val() == n })
}

// atkAwait polls cond every 2 ms for up to 5 s, or fails with what.
func atkAwait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// atkProxied starts a proxy to srv and a Client whose connections go
// through it. tweak, if not nil, changes the go-redis options first.
func atkProxied(t *testing.T, srv *redistest.Server, tweak func(*redis.Options), opts ...rlock.Option) (*atkProxy, *rlock.Client) {
	t.Helper()
	prx := atkStartProxy(t, srv.Addr)
	o := redistest.Options(prx.Addr())
	if tweak != nil {
		tweak(o)
	}
	rdb := redis.NewClient(o)
	t.Cleanup(func() { rdb.Close() })
	c, err := rlock.New(rdb, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return prx, c
}

// atkQueue is the queue key of the resource of kind ("lock", "write",
// "rw", "read" or "sem") named name.
func atkQueue(kind, name string) string {
	return atkResourceKey(kind, name) + ":queue"
}

// atkResourceKey is the hash of the resource of kind named name.
func atkResourceKey(kind, name string) string {
	switch kind {
	case "write", "rw", "read":
		return "baton:{" + name + "}:rw"
	case "sem":
		return "baton:{" + name + "}:sem"
	}
	return "baton:{" + name + "}"
}

// atkHold takes the resource of kind ("lock", "lock WithLease", "write" or
// "rw", "read", "sem": a semaphore of size 1, one permit) named name
// through c, and returns its hold's Context and its Unlock or Release.
func atkHold(c *rlock.Client, ctx context.Context, kind, name string, opts ...rlock.LockOption) (context.Context, func() error, error) {
	type held interface {
		Context() context.Context
	}
	var h held
	var end func() error
	switch kind {
	case "lock", "lock WithLease":
		if kind == "lock WithLease" {
			opts = append(opts, rlock.WithLease(60*time.Second))
		}
		l, err := c.Lock(ctx, name, opts...)
		if err != nil {
			return nil, nil, err
		}
		h, end = l, func() error { return l.Unlock(ctx) }
	case "write", "rw":
		l, err := c.RWLock(name).Lock(ctx, opts...)
		if err != nil {
			return nil, nil, err
		}
		h, end = l, func() error { return l.Unlock(ctx) }
	case "read":
		l, err := c.RWLock(name).RLock(ctx, opts...)
		if err != nil {
			return nil, nil, err
		}
		h, end = l, func() error { return l.Unlock(ctx) }
	case "sem":
		p, err := c.Semaphore(name, 1).Acquire(ctx, 1, opts...)
		if err != nil {
			return nil, nil, err
		}
		h, end = p, func() error { return p.Release(ctx) }
	default:
		panic("atkHold: kind " + kind)
	}
	return h.Context(), end, nil
}

// atkLockKind is a resource that hands out *rlock.Lock: the plain lock
// ("lock"), or the RW lock's write ("write") or read ("read").
type atkLockKind struct {
	kind, name string
}

func (k atkLockKind) qkey() string { return atkQueue(k.kind, k.name) }

// take waits for the resource.
func (k atkLockKind) take(cl *rlock.Client, ctx context.Context, o ...rlock.LockOption) (*rlock.Lock, error) {
	switch k.kind {
	case "write":
		return cl.RWLock(k.name).Lock(ctx, o...)
	case "read":
		return cl.RWLock(k.name).RLock(ctx, o...)
	}
	return cl.Lock(ctx, k.name, o...)
}

// try is the TryLock of the same kind.
func (k atkLockKind) try(cl *rlock.Client, ctx context.Context, o ...rlock.LockOption) (*rlock.Lock, error) {
	switch k.kind {
	case "write":
		return cl.RWLock(k.name).TryLock(ctx, o...)
	case "read":
		return cl.RWLock(k.name).TryRLock(ctx, o...)
	}
	return cl.TryLock(ctx, k.name, o...)
}

// tryOther is the TryLock of the kind that conflicts with this one: a
// read beside a write, a write beside a read, the plain lock beside itself.
func (k atkLockKind) tryOther(cl *rlock.Client, ctx context.Context, o ...rlock.LockOption) (*rlock.Lock, error) {
	switch k.kind {
	case "write":
		return cl.RWLock(k.name).TryRLock(ctx, o...)
	case "read":
		return cl.RWLock(k.name).TryLock(ctx, o...)
	}
	return cl.TryLock(ctx, k.name, o...)
}

// state is what Inspect tells of the resource, for the log.
func (k atkLockKind) state(cl *rlock.Client, ctx context.Context) string {
	if k.kind == "lock" {
		st, _ := cl.Inspect(ctx, k.name)
		return fmt.Sprintf("holders %+v ttl %v", st.Holders, st.TTL)
	}
	st, _ := cl.RWLock(k.name).Inspect(ctx)
	return fmt.Sprintf("%+v", st)
}

// atkProxy forwards TCP to a Redis server; while held, replies to the
// clients are kept back (requests still reach the server), then delivered
// in order on release. HoldRequests keeps requests back instead.
type atkProxy struct {
	relay   *relay.Relay
	mu      sync.Mutex
	held    bool
	heldReq bool
	// reqHeldAt is when the first request kept back since HoldRequests
	// came, zero if none has.
	reqHeldAt time.Time
	cond      *sync.Cond
	live      []net.Conn
}

// atkStartProxy forwards a loopback port to target until the test ends.
func atkStartProxy(t *testing.T, target string) *atkProxy {
	t.Helper()
	p := &atkProxy{}
	p.cond = sync.NewCond(&p.mu)
	r, err := relay.Start(target, p.serve)
	if err != nil {
		t.Fatal(err)
	}
	p.relay = r
	t.Cleanup(func() {
		p.Release()
		p.ReleaseRequests()
		r.Close()
	})
	return p
}

// serve forwards requests and replies between client and server until
// either side ends.
func (p *atkProxy) serve(client, server net.Conn) {
	p.mu.Lock()
	p.live = append(p.live, client, server)
	p.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() { p.pipe(client, server, &p.heldReq) })
	p.pipe(server, client, &p.held)
	wg.Wait()
}

// pipe copies from to to, waiting while *held, and closes to when done.
func (p *atkProxy) pipe(from, to net.Conn, held *bool) {
	defer to.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 {
			p.mu.Lock()
			if *held && held == &p.heldReq && p.reqHeldAt.IsZero() {
				p.reqHeldAt = time.Now()
			}
			for *held {
				p.cond.Wait()
			}
			p.mu.Unlock()
			if _, werr := to.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *atkProxy) Addr() string { return p.relay.Addr }
func (p *atkProxy) Hold()        { p.mu.Lock(); p.held = true; p.mu.Unlock() }

// KillAll closes every connection made so far, both sides: what the
// clients had in flight is lost.
func (p *atkProxy) KillAll() {
	p.mu.Lock()
	for _, c := range p.live {
		c.Close()
	}
	p.live = nil
	p.mu.Unlock()
}

func (p *atkProxy) HoldRequests() {
	p.mu.Lock()
	p.heldReq, p.reqHeldAt = true, time.Time{}
	p.mu.Unlock()
}

// RequestHeldBefore says whether a request has been kept back, since
// HoldRequests, that came before t.
func (p *atkProxy) RequestHeldBefore(t time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.reqHeldAt.IsZero() && p.reqHeldAt.Before(t)
}
func (p *atkProxy) ReleaseRequests() {
	p.mu.Lock()
	p.heldReq = false
	p.cond.Broadcast()
	p.mu.Unlock()
}
func (p *atkProxy) Release() {
	p.mu.Lock()
	p.held = false
	p.cond.Broadcast()
	p.mu.Unlock()
}
