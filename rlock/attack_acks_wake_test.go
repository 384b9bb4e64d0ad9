package rlock_test

// Attacks on replica acknowledgements from the outside, issue 31: the
// waiters behind a grant that no replica acknowledged. Helpers in
// attack_acks_test.go and attack_helpers_test.go.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/rlock"
)

// atkWakeBound is how soon a waiter must be granted once the grant before
// it has been given back: a few round trips on a loaded machine. A waiter
// left to find the lock free by its own looks waits about the holder's
// lease (the default 30 s watchdog lease), far beyond it.
const atkWakeBound = 3 * time.Second

// atkTaken is what a background take of a resource returned.
type atkTaken struct {
	held  context.Context
	end   func() error
	err   error
	at    time.Time
	owner string // the handle's, where it says
}

// atkGo runs take on another goroutine and reports what it returned; the
// test ends the handle it got.
func atkGo(ctx context.Context, take func() (*rlock.Lock, error)) <-chan atkTaken {
	got := make(chan atkTaken, 1)
	go func() {
		l, err := take()
		r := atkTaken{err: err, at: time.Now()}
		if l != nil {
			r.held, r.end, r.owner = l.Context(), func() error { return l.Unlock(ctx) }, l.Owner()
		}
		got <- r
	}()
	return got
}

// atkTakeInBackground takes the resource of kind (as atkHold) named name
// through c, on another goroutine; the test ends what it took.
func atkTakeInBackground(ctx context.Context, c *rlock.Client, kind, name string) <-chan atkTaken {
	got := make(chan atkTaken, 1)
	go func() {
		held, end, err := atkHold(c, ctx, kind, name)
		got <- atkTaken{held: held, end: end, err: err, at: time.Now()}
	}()
	return got
}

// atkAwaitTaken is the result of a background take, failing after 10 s.
func atkAwaitTaken(t *testing.T, got <-chan atkTaken, what string) atkTaken {
	t.Helper()
	select {
	case r := <-got:
		return r
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return", what)
		return atkTaken{}
	}
}

// atkWokenSoon requires the waiter behind, got, to be granted within
// atkWakeBound of since, and ends its hold.
func atkWokenSoon(t *testing.T, got <-chan atkTaken, since time.Time, rdb *redis.Client, key string) {
	t.Helper()
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("the waiter behind failed: %v", r.err)
		}
		if err := r.end(); err != nil {
			t.Fatalf("the waiter behind: its end: %v", err)
		}
		t.Logf("the waiter behind was granted %v after the give-back", r.at.Sub(since))
	case <-time.After(time.Until(since.Add(atkWakeBound))):
		t.Fatalf("lost wake-up: the waiter behind is still waiting %v after the give-back (resource TTL %v, queue %d)",
			atkWakeBound, rdb.PTTL(context.Background(), key).Val(), rdb.LLen(context.Background(), key+":queue").Val())
	}
}

// "A grant not acknowledged is given back (the queue moves on)": a free
// acquire whose acknowledgement times out while a waiter has queued behind
// its grant must pass the resource on to that waiter at once, not leave it
// to find the resource free at the lease's end (30 s).
func TestAttackAcksFailedFreeAcquireWakesTheWaiterBehind(t *testing.T) {
	for _, pair := range [][2]string{{"lock", "lock"}, {"rw", "rw"}, {"rw", "read"}, {"read", "rw"}, {"sem", "sem"}} {
		t.Run(pair[0]+" then "+pair[1], func(t *testing.T) {
			ctx := atkCtx(t)
			srv, replica := atkReplicated(t)
			rdb := srv.Admin()
			name := "free-" + pair[0] + "-" + pair[1]
			key := atkResourceKey(pair[0], name)
			a, b := atkAcked(t, srv), atkUnacked(t, srv)
			atkPause(t, replica)
			first := atkTakeInBackground(ctx, a, pair[0], name)
			atkAwait(t, "A's grant is in Redis", func() bool { return rdb.Exists(ctx, key).Val() == 1 })
			behind := atkTakeInBackground(ctx, b, pair[1], name)
			atkWaitLen(t, rdb, key+":queue", 1)
			r := atkAwaitTaken(t, first, "A's Lock")
			atkRequireNotReplicated(t, "A's grant", r.err)
			atkWokenSoon(t, behind, r.at, rdb, key)
		})
	}
}

// The same for a hand-off: A releases to B (acknowledged), B's
// acknowledgement times out, or B's ctx ends during it ("a ctx cancelled
// during the wait leaves nothing held either"); C, queued behind B, must
// be granted at once. For the RW lock, two reads are granted together by
// the write's release (a batch grant), and a write queued behind them;
// for a semaphore of size 2, two asks of 1, and an ask of 2 behind.
func TestAttackAcksFailedHandOffWakesTheWaiterBehind(t *testing.T) {
	type setup struct{ hold, waiters, behind string }
	for _, s := range []setup{{"lock", "lock", "lock"}, {"rw", "rw", "rw"}, {"rw", "read read", "rw"}, {"sem2", "sem1 sem1", "sem2"}} {
		for _, cancel := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, %s, then %s, cancelled %v", s.hold, s.waiters, s.behind, cancel), func(t *testing.T) {
				atkHandOffBehind(t, s.hold, splitKinds(s.waiters), s.behind, cancel)
			})
		}
	}
}

func splitKinds(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != ' ' {
			i++
		}
		out = append(out, s[:i])
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return out
}

// atkSemHold is atkHold for "sem1" and "sem2": a semaphore of size 2, and
// 1 or 2 permits; the other kinds are atkHold's.
func atkSemHold(c *rlock.Client, ctx context.Context, kind, name string) (context.Context, func() error, error) {
	n := map[string]int64{"sem1": 1, "sem2": 2}[kind]
	if n == 0 {
		return atkHold(c, ctx, kind, name)
	}
	p, err := c.Semaphore(name, 2).Acquire(ctx, n)
	if err != nil {
		return nil, nil, err
	}
	return p.Context(), func() error { return p.Release(context.Background()) }, nil
}

// atkHandOffBehind runs one case of
// TestAttackAcksFailedHandOffWakesTheWaiterBehind.
func atkHandOffBehind(t *testing.T, hold string, waiters []string, behind string, cancel bool) {
	ctx := atkCtx(t)
	srv, replica := atkReplicated(t)
	rdb := srv.Admin()
	name := "handoff"
	kind := map[string]string{"sem1": "sem", "sem2": "sem"}[hold]
	if kind == "" {
		kind = hold
	}
	key := atkResourceKey(kind, name)
	_, release, err := atkSemHold(atkUnacked(t, srv), ctx, hold, name)
	if err != nil {
		t.Fatal(err)
	}
	var got []<-chan atkTaken
	var cancels []context.CancelFunc
	for i, w := range waiters {
		wctx, stop := context.WithCancel(ctx)
		cancels = append(cancels, stop)
		defer stop()
		ch := make(chan atkTaken, 1)
		c := atkAcked(t, srv)
		go func() {
			held, end, err := atkSemHold(c, wctx, w, name)
			ch <- atkTaken{held: held, end: end, err: err, at: time.Now()}
		}()
		got = append(got, ch)
		atkWaitLen(t, rdb, key+":queue", int64(i+1))
	}
	after := make(chan atkTaken, 1)
	b := atkUnacked(t, srv)
	go func() {
		held, end, err := atkSemHold(b, ctx, behind, name)
		after <- atkTaken{held: held, end: end, err: err, at: time.Now()}
	}()
	atkWaitLen(t, rdb, key+":queue", int64(len(waiters)+1))

	atkPause(t, replica)
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if cancel {
		time.Sleep(200 * time.Millisecond) // within the acknowledgement wait
		for _, stop := range cancels {
			stop()
		}
	}
	var last time.Time
	for i, ch := range got {
		r := atkAwaitTaken(t, ch, fmt.Sprintf("waiter %d", i))
		if r.err == nil {
			_ = r.end()
			t.Fatalf("waiter %d was granted with its replica stopped", i)
		}
		if cancel && !errors.Is(r.err, context.Canceled) {
			atkRequireNotReplicated(t, fmt.Sprintf("waiter %d", i), r.err)
		} else if !cancel {
			atkRequireNotReplicated(t, fmt.Sprintf("waiter %d", i), r.err)
		}
		if r.at.After(last) {
			last = r.at
		}
	}
	atkWokenSoon(t, after, last, rdb, key)
}
