package rlock

// Helpers of the outside attack on quorum waiting's wake records
// (attack_wake_*_test.go): the public API, bench/redistest and the
// suite's test helpers only.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/batonlock/baton/bench/redistest"
)

// wkLeft names every key of lock name left on any node: its hash, queue,
// granted and wake keys (the fence counter stays by design).
func wkLeft(ctx context.Context, srvs []*redistest.Server, name string) string {
	k := lockKey(name)
	out := ""
	for i, s := range srvs {
		for _, key := range []string{k, k + ":queue", k + ":granted", k + ":wake"} {
			n, err := s.Admin().Exists(ctx, key).Result()
			if err != nil || n > 0 {
				out += fmt.Sprintf("node %d: %s (err %v, type %s, pttl %v, hash %v, zset %v, list %v); ", i, key, err,
					s.Admin().Type(ctx, key).Val(), s.Admin().PTTL(ctx, key).Val(), s.Admin().HGetAll(ctx, key).Val(),
					s.Admin().ZRangeWithScores(ctx, key, 0, -1).Val(), s.Admin().LRange(ctx, key, 0, -1).Val())
			}
		}
	}
	return out
}

// lockOnAll is c's Lock of name, held on every node of srvs: a hold on a
// bare majority (a loaded machine's third node answering past the look's
// linger) cannot be released with one of its nodes paused (its Unlock
// waits for that node: the documented bare-majority limit), which is not
// what the waiting tests test. A Lock short of every node is unlocked and
// taken again, up to 5 times.
func lockOnAll(t *testing.T, ctx context.Context, c *Client, srvs []*redistest.Server, name string) *Lock {
	t.Helper()
	for range 5 {
		l, err := c.Lock(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		onAll := func() bool {
			for _, s := range srvs {
				if s.Admin().Exists(ctx, lockKey(name)).Val() == 0 {
					return false
				}
			}
			return true
		}
		deadline := time.Now().Add(time.Second)
		for !onAll() && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if onAll() {
			return l
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("no Lock of %q on all %d nodes in 5 tries", name, len(srvs))
	return nil
}

// wkGot is one Lock call's result.
type wkGot struct {
	id   int
	l    *Lock
	err  error
	at   time.Time
	took time.Duration
}

// wkLock runs c.Lock(ctx, name, opts...) on a goroutine; its result comes on res.
func wkLock(ctx context.Context, c *Client, name string, id int, res chan<- wkGot, opts ...LockOption) {
	go func() {
		start := time.Now()
		l, err := c.Lock(ctx, name, opts...)
		res <- wkGot{id: id, l: l, err: err, at: time.Now(), took: time.Since(start)}
	}()
}

// wkSlowLease is the watchdog lease of the attack's waiters: a waiter
// looks at least every third of it (20 s), so one granted within 9 s of a
// release was woken, not found by its periodic look.
const wkSlowLease = 60 * time.Second

// wkWakeBound is how long after the release a recorded waiter, whose node
// was paused after its look, may take: the README's one wait for the
// paused node (6.1 s at most), plus 2.9 s for a loaded machine.
const wkWakeBound = 9 * time.Second

// wkAwaitSecond waits for W2's result on res: within wkWakeBound of the
// release W2 must hear (from: A's, then W1's Unlock where W1 is granted
// first), an Errorf as a lost wake-up past it (what says the set-up), a
// Fatalf past giveUp. W1's result, if it comes first, goes to onW1, which
// unlocks it if granted. It returns W1's result (nil if it has not come),
// W2's, and from.
func wkAwaitSecond(t *testing.T, ctx context.Context, srvs []*redistest.Server, name string, res <-chan wkGot, from time.Time, giveUp time.Duration, onW1 func(g wkGot), what string) (w1, w2 *wkGot, last time.Time) {
	t.Helper()
	unlockAt, lost := from, false
	for w2 == nil {
		wait := time.Until(from.Add(wkWakeBound))
		if lost {
			wait = time.Until(from.Add(giveUp))
		}
		select {
		case g := <-res:
			t.Logf("W%d returned %v after A's Unlock began (took %v): %v", g.id, g.at.Sub(unlockAt), g.took, g.err)
			if g.id == 1 {
				w1 = &g
				if g.err == nil {
					onW1(g)
					from = time.Now()
				}
				continue
			}
			w2 = &g
		case <-time.After(wait):
			if lost {
				t.Fatalf("W2 still not granted %v after the release", giveUp)
			}
			t.Errorf("lost wake-up: W2 not granted %v after the release with node 0 paused (%s); nodes 1,2 (shown as 0,1): %s",
				wkWakeBound, what, wkLeft(ctx, srvs[1:], name))
			lost = true
		}
	}
	if lost {
		t.Logf("W2 granted at last %v after the release", w2.at.Sub(from))
	}
	return w1, w2, from
}
