package rlock_test

// Attacks on replica acknowledgements from the outside (public API and
// bench/redistest only), issue 31. Each test names the README promise it
// checks. Helpers here and in attack_helpers_test.go.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/rlock"
)

// atkAckTimeout is the acknowledgement timeout of the attacks' acked
// clients: long enough for a running replica's ack on a loaded machine
// (the suite's acks tests found 1 s enough, 300 ms not), below go-redis's
// 3 s ReadTimeout as WithReplicaAcks requires.
const atkAckTimeout = time.Second

// atkReplicated starts a server and a replica of it that has caught up
// and acknowledged it once: the first acknowledgement after a sync came
// later than atkAckTimeout, 1 run in 25 on the suite's load.
func atkReplicated(t *testing.T) (srv, replica *redistest.Server) {
	t.Helper()
	srv = redistest.Start(t)
	replica = redistest.StartReplica(t, srv)
	if n := srv.Admin().Wait(context.Background(), 1, 10*time.Second).Val(); n != 1 {
		t.Fatalf("the replica did not acknowledge within 10 s (%d)", n)
	}
	return srv, replica
}

// atkPause stops replica (SIGSTOP) until resume is called, or the test
// ends: the master still counts it as connected, and WAIT times out.
func atkPause(t *testing.T, replica *redistest.Server) (resume func()) {
	t.Helper()
	replica.Pause()
	t.Cleanup(replica.Resume) // before the replica's own clean-up stops it
	return replica.Resume
}

// atkAcked is a Client that waits for one acknowledgement per grant and
// renewal, within atkAckTimeout.
func atkAcked(t *testing.T, srv *redistest.Server, opts ...rlock.Option) *rlock.Client {
	t.Helper()
	return atkClient(t, srv, append(opts, rlock.WithReplicaAcks(1, atkAckTimeout))...)
}

// atkUnacked is a Client that waits for no acknowledgement, whatever the
// replicas: the bystander of the attacks, whose own grants must not hang
// on a stopped replica.
func atkUnacked(t *testing.T, srv *redistest.Server) *rlock.Client {
	t.Helper()
	return atkClient(t, srv, rlock.WithReplicaAcks(0, 0))
}

// atkRequireNotReplicated fails the test unless err is the failed
// acknowledgement's.
func atkRequireNotReplicated(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, rlock.ErrNotReplicated) || !errors.Is(err, rlock.ErrNotObtained) {
		t.Fatalf("%s: got %v, want ErrNotReplicated and ErrNotObtained", what, err)
	}
}

// atkGiveBackCase is a hold taken (first, acknowledged) and a second grant
// of the same owner or resource (second) that no replica acknowledges.
type atkGiveBackCase struct {
	// first takes the first hold through a and returns its Context and its
	// end (Unlock or Release).
	first func(ctx context.Context, a *rlock.Client) (context.Context, func() error, error)
	// second asks through b (or a) for a grant beside the first hold.
	second func(ctx, held context.Context, a, b *rlock.Client) error
	// intruder is what a bystander must not get while the first hold
	// lives; it returns the intruder's end when it got in.
	intruder func(ctx context.Context, c *rlock.Client) (func() error, error)
}

// "A grant not acknowledged is given back before Lock returns
// ErrNotReplicated", and "a grant goes back once, with its own count ...
// never that of another call of the same WithOwner owner". A re-entry,
// a shared owner's second call, a downgrade and a second permit are
// grants of a resource already held: the give-back of the unacknowledged
// one must leave the first hold whole, so a bystander stays out while its
// Context is alive, and gets in once it ends.
func TestAttackAcksGiveBackKeepsTheFirstHold(t *testing.T) {
	owned := func(ctx context.Context) context.Context { return rlock.WithOwner(ctx, "X") }
	lockEnd := func(l *rlock.Lock, err error) (context.Context, func() error, error) {
		if err != nil {
			return nil, nil, err
		}
		return l.Context(), func() error { return l.Unlock(context.Background()) }, nil
	}
	errOf := func(l *rlock.Lock, err error) error {
		if l != nil {
			_ = l.Unlock(context.Background())
		}
		return err
	}
	tryPlain := func(ctx context.Context, c *rlock.Client) (func() error, error) {
		l, err := c.TryLock(ctx, "plain")
		_, end, err := lockEnd(l, err)
		return end, err
	}
	tryWrite := func(ctx context.Context, c *rlock.Client) (func() error, error) {
		l, err := c.RWLock("rw").TryLock(ctx)
		_, end, err := lockEnd(l, err)
		return end, err
	}
	tryRead := func(ctx context.Context, c *rlock.Client) (func() error, error) {
		l, err := c.RWLock("rw").TryRLock(ctx)
		_, end, err := lockEnd(l, err)
		return end, err
	}
	plainFirst := func(octx func(context.Context) context.Context) func(context.Context, *rlock.Client) (context.Context, func() error, error) {
		return func(ctx context.Context, a *rlock.Client) (context.Context, func() error, error) {
			return lockEnd(a.Lock(octx(ctx), "plain"))
		}
	}
	writeFirst := func(ctx context.Context, a *rlock.Client) (context.Context, func() error, error) {
		return lockEnd(a.RWLock("rw").Lock(owned(ctx)))
	}
	readFirst := func(ctx context.Context, a *rlock.Client) (context.Context, func() error, error) {
		return lockEnd(a.RWLock("rw").RLock(owned(ctx)))
	}
	self := func(ctx context.Context) context.Context { return ctx }
	cases := map[string]atkGiveBackCase{
		"plain re-entry": {first: plainFirst(self), intruder: tryPlain,
			second: func(_, held context.Context, a, _ *rlock.Client) error { return errOf(a.Lock(held, "plain")) }},
		"plain owner, same client": {first: plainFirst(owned), intruder: tryPlain,
			second: func(ctx, _ context.Context, a, _ *rlock.Client) error { return errOf(a.Lock(owned(ctx), "plain")) }},
		"plain owner, other client": {first: plainFirst(owned), intruder: tryPlain,
			second: func(ctx, _ context.Context, _, b *rlock.Client) error { return errOf(b.Lock(owned(ctx), "plain")) }},
		"write re-entry": {first: writeFirst, intruder: tryRead,
			second: func(_, held context.Context, a, _ *rlock.Client) error { return errOf(a.RWLock("rw").Lock(held)) }},
		"write owner, other client": {first: writeFirst, intruder: tryRead,
			second: func(ctx, _ context.Context, _, b *rlock.Client) error { return errOf(b.RWLock("rw").Lock(owned(ctx))) }},
		"downgrade": {first: writeFirst, intruder: tryRead,
			second: func(_, held context.Context, a, _ *rlock.Client) error { return errOf(a.RWLock("rw").RLock(held)) }},
		"read re-entry": {first: readFirst, intruder: tryWrite,
			second: func(_, held context.Context, a, _ *rlock.Client) error { return errOf(a.RWLock("rw").RLock(held)) }},
		"read owner, other client": {first: readFirst, intruder: tryWrite,
			second: func(ctx, _ context.Context, _, b *rlock.Client) error { return errOf(b.RWLock("rw").RLock(owned(ctx))) }},
		"second permit": {
			first: func(ctx context.Context, a *rlock.Client) (context.Context, func() error, error) {
				p, err := a.Semaphore("sem", 2).Acquire(ctx, 1)
				if err != nil {
					return nil, nil, err
				}
				return p.Context(), func() error { return p.Release(context.Background()) }, nil
			},
			second: func(ctx, _ context.Context, _, b *rlock.Client) error {
				p, err := b.Semaphore("sem", 2).Acquire(ctx, 1)
				if p != nil {
					_ = p.Release(ctx)
				}
				return err
			},
			intruder: func(ctx context.Context, c *rlock.Client) (func() error, error) {
				p, err := c.Semaphore("sem", 2).TryAcquire(ctx, 2)
				if err != nil {
					return nil, err
				}
				return func() error { return p.Release(context.Background()) }, nil
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { atkGiveBackKeepsFirst(t, tc) })
	}
}

// atkGiveBackKeepsFirst runs one case of
// TestAttackAcksGiveBackKeepsTheFirstHold.
func atkGiveBackKeepsFirst(t *testing.T, tc atkGiveBackCase) {
	ctx := atkCtx(t)
	srv, replica := atkReplicated(t)
	a, b, c := atkAcked(t, srv), atkAcked(t, srv), atkUnacked(t, srv)
	held, end, err := tc.first(ctx, a)
	if err != nil {
		t.Fatalf("first hold, acknowledged by a running replica: %v", err)
	}
	resume := atkPause(t, replica)
	atkRequireNotReplicated(t, "the second grant", tc.second(ctx, held, a, b))
	resume()

	if err := held.Err(); err != nil {
		t.Fatalf("the first hold ended with the second grant's give-back: %v", context.Cause(held))
	}
	if out, err := tc.intruder(ctx, c); err == nil {
		_ = out()
		t.Fatalf("a bystander got in beside the first hold (alive: %v): the give-back took the first hold's count", held.Err() == nil)
	}
	if err := end(); err != nil {
		t.Fatalf("the first hold's end: %v", err)
	}
	out, err := tc.intruder(ctx, c)
	if err != nil {
		t.Fatalf("after the first hold's end, the bystander is still kept out: %v", err)
	}
	_ = out()
}
