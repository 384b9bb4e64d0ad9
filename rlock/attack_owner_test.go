package rlock_test

// Attacks from the outside (public API and bench/redistest only), issue 30
// follow-up. Each test names the README promise it checks. Helpers in
// attack_helpers_test.go.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/rlock"
)

// Shared owner across clients, then Close of one of them. "callers with the
// same owner are one owner"; Close "releases the locks this client still
// holds". It may give back this client's counts only: B's re-entry under the
// same owner still holds, so a third client must not get the lock while B's
// Context is alive.
func TestAttackSharedOwnerClose(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	b, c := atkClient(t, srv), atkClient(t, srv)
	a := atkUnclosed(t, srv)
	const name = "sharedclose"
	octx := rlock.WithOwner(ctx, "job-1")
	la, err := a.Lock(octx, name)
	if err != nil {
		t.Fatal(err)
	}
	_ = la
	lb, err := b.Lock(octx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Unlock(ctx)
	rwa, err := a.RWLock(name).RLock(octx)
	if err != nil {
		t.Fatal(err)
	}
	_ = rwa
	rwb, err := b.RWLock(name).RLock(octx)
	if err != nil {
		t.Fatal(err)
	}
	defer rwb.Unlock(ctx)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	atkThirdKeptOut(t, ctx, c, name, " after A's Close", lb, rwb)
}

// Shared owner across clients, one handle's fixed lease runs out: its Unlock
// returns ErrLockLost "the release is sent all the same". It must give back
// only its own count: B's re-entry under the same owner is still held (and
// renewed), so a third client must not get the lock.
func TestAttackSharedOwnerStaleUnlock(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	a, b, c := atkClient(t, srv), atkClient(t, srv), atkClient(t, srv)
	const name = "sharedstale"
	octx := rlock.WithOwner(ctx, "job-2")
	la, err := a.Lock(octx, name, rlock.WithLease(150*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	lb, err := b.Lock(octx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Unlock(ctx)
	ra, err := a.RWLock(name).RLock(octx, rlock.WithLease(150*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	rb, err := b.RWLock(name).RLock(octx)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Unlock(ctx)
	time.Sleep(400 * time.Millisecond)
	t.Logf("stale plain Unlock: %v; stale read Unlock: %v", la.Unlock(ctx), ra.Unlock(ctx))
	atkThirdKeptOut(t, ctx, c, name, "", lb, rb)
}

// Attack finding 1, the cancel path (fails about 1 run in 6; 2 of 14 runs
// measured): a shared owner's waiter granted while its client hears nothing
// (a proxy holds B's replies, so B's new connections cannot even start),
// then cancelled, while the same owner re-entered on another client in
// between. When the replies flow, the leave and the grant's hand-back race;
// in the failing runs both give back a count: X:2 becomes 0 (logged
// "after W1 gave up: map[]") and E gets the lock beside D.
// The cancelled waiter's give-back must take back its own count only
// ("callers with the same owner are one owner"; "A failed call never leaves
// the lock taken" — and never frees another caller's count): D's hold of
// owner X stays, and nobody else gets the lock while D's Context is alive.
func TestAttackSharedOwnerCancelledGrant(t *testing.T) {
	ctx, rdb, prx, a, b, d, e := atkOwnerCast(t)
	const name = "sharedgrant"
	l, err := a.Lock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	octx := rlock.WithOwner(ctx, "X")
	wctx, cancel := context.WithCancel(octx)
	w1 := make(chan error, 1)
	go func() {
		l, err := b.Lock(wctx, name)
		if err == nil {
			t.Log("W1 got the lock after all")
			l.Unlock(ctx)
		}
		w1 <- err
	}()
	ld := atkGrantUnheard(t, ctx, rdb, prx, atkQueue("lock", name), l, false, func() (*rlock.Lock, error) { return d.TryLock(octx, name) })
	defer ld.Unlock(ctx)
	st, _ := a.Inspect(ctx, name)
	t.Logf("after the grant and D's re-entry: %+v", st.Holders)
	cancelAt := time.Now()
	cancel()
	time.Sleep(400 * time.Millisecond)
	st, _ = a.Inspect(ctx, name)
	t.Logf("400 ms after the cancel, replies still held: %+v", st.Holders)
	prx.Release()
	select {
	case err := <-w1:
		t.Logf("W1: %v (%v after the cancel)", err, time.Since(cancelAt))
	case <-time.After(5 * time.Second):
		t.Fatal("W1 did not return")
	}
	time.Sleep(300 * time.Millisecond)
	st, _ = a.Inspect(ctx, name)
	t.Logf("after W1 gave up: %+v", st.Holders)
	atkEKeptOut(t, ctx, "", ld, func() (*rlock.Lock, error) { return e.TryLock(ctx, name, rlock.WaitAtMost(500*time.Millisecond)) })
}

// Two waiters of one shared owner X on two clients queue behind A ("waiters
// that share an owner through WithOwner queue as separate calls, and
// re-enter each other's holds"). A's release grants the first; the second,
// whose looks come every 200 ms (a 600 ms watchdog lease), must not take
// the first's grant as its own: whenever both hold, the count is 2, and
// after the first's Unlock nobody else gets the lock while the second's
// Context is alive.
func TestAttackSharedOwnerTwoWaiters(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	a, e := atkClient(t, srv), atkClient(t, srv)
	b := atkClient(t, srv, rlock.WithWatchdogLease(600*time.Millisecond))
	c := atkClient(t, srv, rlock.WithWatchdogLease(600*time.Millisecond))
	rdb := srv.Admin()
	for _, kind := range []string{"lock", "write"} {
		k := atkLockKind{kind, "twowait-" + kind}
		qkey, take := k.qkey(), k.take
		l, err := take(a, ctx)
		if err != nil {
			t.Fatal(err)
		}
		octx := rlock.WithOwner(ctx, "X-"+kind)
		w1, w2 := make(chan *rlock.Lock, 1), make(chan *rlock.Lock, 1)
		go func() { l, _ := take(b, octx); w1 <- l }()
		atkWaitLen(t, rdb, qkey, 1)
		go func() { l, _ := take(c, octx); w2 <- l }()
		atkWaitLen(t, rdb, qkey, 2)
		l.Unlock(ctx)
		l1 := <-w1
		var l2 *rlock.Lock
		select {
		case l2 = <-w2:
			t.Logf("%s: second waiter returned while the first holds", kind)
		case <-time.After(time.Second):
		}
		if err := l1.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if l2 == nil {
			select {
			case l2 = <-w2:
			case <-time.After(3 * time.Second):
				t.Fatalf("%s: second waiter not granted after the first's Unlock", kind)
			}
		}
		if le, err := k.tryOther(e, ctx, rlock.WaitAtMost(500*time.Millisecond)); err == nil {
			le.Unlock(ctx)
			t.Errorf("%s: E got in while the second waiter of owner X holds (%v)", kind, l2.Context().Err())
		}
		l2.Unlock(ctx)
	}
}

// Attack finding 1, the hand-back path (fails about 1 run in 5 for the plain
// lock; the write variant passed in the runs made): a shared owner's waiter
// W1 is granted while its client is cut off both ways; D re-enters owner X (count 2); W1 gives up (its leave goes to the
// background); then the grant message reaches B after its waiter has gone
// ("released"), and only then do B's requests reach Redis: the leave ("if it
// was granted ... passes the lock on") and the release of the unclaimed
// grant. Between them they must give back W1's one count only: D's count
// stays, and E must not get the lock while D's Context is alive.
func TestAttackSharedOwnerGrantAfterGone(t *testing.T) {
	ctx, rdb, prx, a, b, d, e := atkOwnerCast(t)
	for _, kind := range []string{"lock", "write"} {
		k, l, octx := atkAHolds(t, ctx, a, kind, "gone-")
		qkey, take, try := k.qkey(), k.take, k.try
		wctx, cancel := context.WithCancel(octx)
		w1 := make(chan error, 1)
		go func() {
			l, err := take(b, wctx)
			if err == nil {
				t.Logf("%s: W1 got the lock after all", kind)
				l.Unlock(ctx)
			}
			w1 <- err
		}()
		ld := atkGrantUnheard(t, ctx, rdb, prx, qkey, l, true, func() (*rlock.Lock, error) { return try(d, octx) })
		cancel()
		select {
		case err := <-w1:
			t.Logf("%s: W1: %v", kind, err)
		case <-time.After(5 * time.Second):
			t.Fatal("W1 did not return")
		}
		prx.Release()
		time.Sleep(300 * time.Millisecond)
		prx.ReleaseRequests()
		time.Sleep(500 * time.Millisecond)
		atkEKeptOut(t, ctx, kind+": ", ld, func() (*rlock.Lock, error) { return try(e, ctx, rlock.WaitAtMost(500*time.Millisecond)) })
		ld.Unlock(ctx)
	}
}

// A shared owner's grant message lost with the connection ("after every
// resubscribe, each waiter looks again with its acquire, which reports a
// grant it missed"; the granted key is "for a waiter that missed the
// message"), while D re-entered owner X in between. W1's look must claim its
// own grant only: W1 and D together hold 2 counts, and after W1's Unlock D's
// count stays, so E must not get the lock while D's Context is alive.
func TestAttackSharedOwnerLostGrantMessage(t *testing.T) {
	ctx, rdb, prx, a, b, d, e := atkOwnerCast(t)
	for _, kind := range []string{"lock", "write"} {
		k, l, octx := atkAHolds(t, ctx, a, kind, "lostmsg-")
		qkey, take, try := k.qkey(), k.take, k.try
		w1 := make(chan *rlock.Lock, 1)
		go func() {
			wctx, cancel := context.WithTimeout(octx, 8*time.Second)
			defer cancel()
			l, err := take(b, wctx)
			if err != nil {
				t.Errorf("%s: W1: %v", kind, err)
			}
			w1 <- l
		}()
		ld := atkGrantUnheard(t, ctx, rdb, prx, qkey, l, false, func() (*rlock.Lock, error) { return try(d, octx) })
		prx.KillAll()
		prx.Release()
		l1 := <-w1
		if l1 == nil {
			t.FailNow()
		}
		if err := l1.Unlock(ctx); err != nil {
			t.Logf("%s: W1 Unlock: %v", kind, err)
		}
		atkEKeptOut(t, ctx, kind+": ", ld, func() (*rlock.Lock, error) { return try(e, ctx, rlock.WaitAtMost(500*time.Millisecond)) })
		ld.Unlock(ctx)
	}
}

// A failed Lock of a shared owner: "A failed Lock never leaves the lock
// taken: its give-back runs in the background" and is "undone by replaying
// its request ID, which tells, then releasing what it held". The call's
// reply is lost with its connection (no go-redis retry), after Redis ran it;
// D holds the same owner X, before the call (a re-entry) or taking it right
// after the call's acquire (so the failed call's count came first). The
// give-back may take the failed call's count only: D's stays, and E must not
// get the lock while D's Context is alive.
func TestAttackSharedOwnerFailedAcquireGiveBack(t *testing.T) {
	ctx := atkCtx(t)
	srv := redistest.Start(t)
	prx, b := atkProxied(t, srv, func(o *redis.Options) { o.MaxRetries = -1 })
	d, e := atkClient(t, srv), atkClient(t, srv)
	var err error
	for _, kind := range []string{"lock", "write", "read"} {
		for _, dFirst := range []bool{true, false} {
			k := atkLockKind{kind, fmt.Sprintf("failgive-%s-%v", kind, dFirst)}
			take := k.take
			octx := rlock.WithOwner(ctx, "X")
			// warm B's connection
			if l, err := take(b, ctx); err != nil {
				t.Fatal(err)
			} else {
				l.Unlock(ctx)
			}
			var ld *rlock.Lock
			if dFirst {
				if ld, err = take(d, octx); err != nil {
					t.Fatal(err)
				}
			}
			prx.Hold()
			got := make(chan error, 1)
			go func() {
				l, err := take(b, octx)
				if err == nil {
					l.Unlock(ctx)
				}
				got <- err
			}()
			time.Sleep(100 * time.Millisecond)
			if !dFirst {
				if ld, err = take(d, octx); err != nil {
					t.Fatal(err)
				}
			}
			prx.KillAll()
			prx.Release()
			err := <-got
			if err == nil {
				t.Logf("%s dFirst=%v: B's call succeeded after all", kind, dFirst)
			}
			time.Sleep(500 * time.Millisecond)
			if le, err := k.tryOther(e, ctx, rlock.WaitAtMost(500*time.Millisecond)); err == nil {
				le.Unlock(ctx)
				t.Errorf("%s dFirst=%v: E got in while D's hold of owner X is alive (%v); B's call: %v", kind, dFirst, ld.Context().Err(), err)
			}
			ld.Unlock(ctx)
		}
	}
}

// atkThirdKeptOut checks that c gets neither the plain lock name nor the
// RW lock's write while B's hold lb and B's read rb of the same owner are
// alive (when tells what happened before, for the message).
func atkThirdKeptOut(t *testing.T, ctx context.Context, c *rlock.Client, name, when string, lb, rb *rlock.Lock) {
	t.Helper()
	if l, err := c.TryLock(ctx, name, rlock.WaitAtMost(500*time.Millisecond)); err == nil {
		l.Unlock(ctx)
		t.Errorf("plain lock: a third client got it%s while B's hold of the same owner is alive (%v)", when, lb.Context().Err())
	}
	if w, err := c.RWLock(name).TryLock(ctx, rlock.WaitAtMost(500*time.Millisecond)); err == nil {
		w.Unlock(ctx)
		t.Errorf("RW lock: a write got in%s while B's read of the same owner is alive (%v)", when, rb.Context().Err())
	}
}

// atkGrantUnheard is the middle of finding 1's sequences: once W1 (on the
// proxied client B) is queued on qkey behind A's hold l, the proxy holds
// B's replies (and its requests, if both), A unlocks, so W1 is granted
// unheard, and D re-enters owner X through dTry. It returns D's handle.
func atkGrantUnheard(t *testing.T, ctx context.Context, rdb *redis.Client, prx *atkProxy, qkey string, l *rlock.Lock, both bool, dTry func() (*rlock.Lock, error)) *rlock.Lock {
	t.Helper()
	atkWaitLen(t, rdb, qkey, 1)
	time.Sleep(50 * time.Millisecond)
	prx.Hold()
	if both {
		prx.HoldRequests()
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	ld, err := dTry()
	if err != nil {
		t.Fatalf("owner X re-entry on D after W1's grant: %v", err)
	}
	return ld
}

// atkOwnerCast is the cast of finding 1's sequences: A holds first, B
// (through the proxy prx) waits as owner X, D re-enters owner X, and E
// must be kept out while D holds.
func atkOwnerCast(t *testing.T) (ctx context.Context, rdb *redis.Client, prx *atkProxy, a, b, d, e *rlock.Client) {
	ctx = atkCtx(t)
	srv := redistest.Start(t)
	prx, b = atkProxied(t, srv, nil)
	a, d, e = atkClient(t, srv), atkClient(t, srv), atkClient(t, srv)
	return ctx, srv.Admin(), prx, a, b, d, e
}

// atkEKeptOut fails the test if E's try gets in while D's hold ld (of
// owner X) is alive; pre starts the message.
func atkEKeptOut(t *testing.T, ctx context.Context, pre string, ld *rlock.Lock, try func() (*rlock.Lock, error)) {
	t.Helper()
	if le, err := try(); err == nil {
		le.Unlock(ctx)
		t.Errorf("%sE got the lock while D's hold of owner X is alive (%v)", pre, ld.Context().Err())
	}
}

// atkAHolds has A take the resource of kind named prefix+kind; it returns
// that resource, A's hold and owner X's ctx.
func atkAHolds(t *testing.T, ctx context.Context, a *rlock.Client, kind, prefix string) (atkLockKind, *rlock.Lock, context.Context) {
	t.Helper()
	k := atkLockKind{kind, prefix + kind}
	l, err := k.take(a, ctx)
	if err != nil {
		t.Fatal(err)
	}
	return k, l, rlock.WithOwner(ctx, "X")
}
