package rlock

import (
	"context"
	"sync"
	"time"

	"github.com/batonlock/baton/reentrant"
)

// undoTimeout bounds a clean-up that runs on its caller's time, once Close
// has begun, and the confirmation of a grant.
const undoTimeout = time.Second

// maxRetryPause is the longest pause between a clean-up's tries while Redis
// cannot be reached: it is how late a give-back may come once Redis is back.
const maxRetryPause = 100 * time.Millisecond

// failed handles an acquire that returned err: it may have run, so giving
// it back happens in the background, and the caller's ctx bounds the call,
// not the clean-up, which goes on while Redis is unreachable (see
// cleanups.run).
func (a *attempt) failed(ctx context.Context, err error, requestID string, w reentrant.Waiter) error {
	if !isServerReply(err) {
		a.c.background.run(a.lease, func(ctx context.Context) {
			a.leave(ctx, w)
			a.undo(ctx, requestID)
		})
	}
	if ctx.Err() != nil {
		return a.waitError(ctx.Err())
	}
	return err
}

// undo gives back an acquire whose reply was lost: it may or may not have
// run, or may run yet (a delayed network). Replaying the same request ID
// tells which, and holds it either way (a late copy of the acquire then
// replays too); one release then restores the count from before the call.
// Both are tried again until Redis answers or ctx ends; if it ends first,
// the lease frees the resource instead.
func (a *attempt) undo(ctx context.Context, requestID string) {
	var hold uint64
	if a.via != nil {
		hold = a.via.hold.id
	}
	undoAcquire(ctx, a.res, a.owner, func(ctx context.Context) (reentrant.AcquireResult, error) {
		return a.acquireAs(ctx, requestID, hold, reentrant.Waiter{})
	})
}

// undoAcquire is undo's way for any acquire of owner's on res: replay
// (the acquire again, as it was sent, with no waiter) until Redis
// answers, and, if it holds, release one count by the ID it names.
func undoAcquire(ctx context.Context, res resource, owner string, replay func(context.Context) (reentrant.AcquireResult, error)) {
	var got reentrant.AcquireResult
	err := untilAnswered(ctx, func(ctx context.Context) (err error) {
		got, err = replay(ctx)
		return err
	})
	if err == nil && got.Acquired {
		releaseRetrying(ctx, res, owner, got.HoldID())
	}
}

// releaseRetrying gives back one count of owner's hold of ID id on res,
// resending the release under one request ID (which replays it) while its
// reply is lost, until ctx ends. A clean-up has no caller to retry it:
// a release lost once would leave the hold in Redis, with no hold in any
// table, until its lease ran out, and every waiter behind it waiting.
func releaseRetrying(ctx context.Context, res resource, owner string, id uint64) {
	_ = untilAnswered(ctx, releaseOnce(res, owner, id))
}

// releaseOnce is one try of a release of one count of owner's hold of ID
// id on res; its tries share one request ID, which replays the first.
func releaseOnce(res resource, owner string, id uint64) func(context.Context) error {
	req := newRequestID()
	return func(ctx context.Context) error {
		_, err := res.release(ctx, owner, id, req)
		return err
	}
}

// untilAnswered calls try until Redis answers it (nil, or an error reply)
// or ctx ends, pausing between tries from 1ms up to maxRetryPause. It
// returns try's last error, or ctx's.
func untilAnswered(ctx context.Context, try func(context.Context) error) error {
	for pause := time.Millisecond; ; pause = min(2*pause, maxRetryPause) {
		err := try(ctx)
		if err == nil || isServerReply(err) {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// leave takes w out of the queue, trying again until Redis answers or ctx
// ends; if it was granted the resource meanwhile, the same script passes
// it on. Leaving is harmless to repeat.
func (a *attempt) leave(ctx context.Context, w reentrant.Waiter) {
	if w.ID == "" {
		return
	}
	_ = untilAnswered(ctx, func(ctx context.Context) error {
		return a.res.leave(ctx, w, a.owner, a.lease, a.newOwner)
	})
}

// leaveWait is how long a call that gave up waits for its leave before it
// returns. A leave takes one round trip; where Redis does not answer, the
// call returns after leaveWait, and the leave goes on in the background.
// go-redis bounds a command by its own timeouts, not by a ctx's deadline,
// so the call cannot wait on the leave itself.
const leaveWait = 250 * time.Millisecond

// leaveNow takes waiter w out of the queue before its call returns, as
// etcd's Mutex deletes its key before Lock returns: a release right after
// the call gave up then cannot grant it the lock, and a retry does not find
// the lock held by its own abandoned waiter. The leave runs as a clean-up,
// retried until Redis answers (see cleanUpNow).
func (a *attempt) leaveNow(w reentrant.Waiter) {
	a.c.cleanUpNow(a.lease, func(ctx context.Context) { a.leave(ctx, w) })
}

// cleanUpNow runs clean-up f in the background, bounded by bound (see
// cleanups.run), and waits for it up to leaveWait: a call that gave up
// has then cleaned up when it returns, unless Redis did not answer in
// time, and then the clean-up goes on without it.
func (c *Client) cleanUpNow(bound time.Duration, f func(ctx context.Context)) {
	done := make(chan struct{})
	c.background.run(bound, func(ctx context.Context) {
		defer close(done)
		f(ctx)
	})
	timer := time.NewTimer(leaveWait)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
	}
}

// giveBack gives back hold g, a grant that arrived dead, so that it
// passes on at once: one an acquire's reply reported (its look claimed it)
// by a release of it, one a message granted by handBack (the grant names
// the waiter until its look or leave, and the hold may carry the counts of
// other calls of the owner, which only the waiter's leave tells apart). If it
// cannot be confirmed within ctx it goes on in the background, and a call
// with an owner of its own takes a new one: its next look must not find
// the dead grant and report it as its own.
func (a *attempt) giveBack(ctx context.Context, g holdGrant) {
	back := a.back(g)
	if back(ctx) == nil {
		return
	}
	a.c.background.run(a.lease, func(ctx context.Context) { _ = untilAnswered(ctx, back) })
	a.remake(a.c)
}

// giveBackLater gives back grant g in the background, retrying while
// Redis is unreachable, for up to the lease.
func (a *attempt) giveBackLater(g holdGrant) {
	a.c.background.run(a.lease, a.backRetrying(g))
}

// backRetrying is the give-back of grant g (see back), tried until Redis
// answers or its ctx ends.
func (a *attempt) backRetrying(g holdGrant) func(context.Context) {
	back := a.back(g)
	return func(ctx context.Context) { _ = untilAnswered(ctx, back) }
}

// back is one try of the give-back of grant g, the one way for how it was
// granted: a release of a grant an acquire's reply reported (its look
// claimed it, or it was never named), whose tries share one request ID;
// the hand-back of one a message granted, which its waiter's leave would
// give back too (see handBack). Any other way would give back a count
// twice, or another call's count of the owner. It reads the attempt
// now: the tries may run on another goroutine while the call goes on.
func (a *attempt) back(g holdGrant) func(context.Context) error {
	if g.to.ID == "" {
		return releaseOnce(a.res, a.owner, g.id)
	}
	res, owner, lease, newOwner := a.res.(batonResource), a.owner, a.lease, a.newOwner
	return func(ctx context.Context) error { return res.handBack(ctx, owner, g, lease, newOwner) }
}

// cleanups runs the clean-ups above in the background, where the call
// that needs one must not wait for it. Each goes on while Redis is
// unreachable, up to a bound of its own (the lease of what it gives back:
// after that Redis has freed it anyway), so that a hold it gives back is
// gone as soon as Redis is reachable again. Close waits for them, up to
// its own bound, then cancels the rest.
type cleanups struct {
	mu      sync.Mutex // guards stopped, ctx and late: no clean-up is added to running once Close waits
	stopped bool
	ctx     context.Context // every clean-up's: cancelled when Close stops waiting
	cancel  context.CancelFunc
	running sync.WaitGroup
	late    lateRuns
}

// lateRuns counts the runs begun once Close had begun, which their
// callers wait for only up to undoTimeout (see runEach); idle is closed
// when the count falls to 0, and made anew when it leaves 0. Close waits
// for them at its end (see waitLate). A WaitGroup would not do: its Add
// may not race its Wait while the count is 0.
type lateRuns struct {
	n    int
	idle chan struct{}
}

// run runs f, with a ctx that ends after bound or when Close gives up on
// it, on a goroutine that Close waits for. Once Close has begun, f runs
// on its caller's time instead, up to undoTimeout (see runEach).
func (cs *cleanups) run(bound time.Duration, f func(ctx context.Context)) {
	cs.runEach(bound, []int{0}, func(ctx context.Context, _ int) { f(ctx) })
}

// runEach runs f for each of items at once, each as run runs one. Once
// Close has begun, they run on its caller's time: runEach returns once
// every f has, or once undoTimeout has passed. A node that does not
// answer holds up nothing else: go-redis does not end a read at its ctx's
// deadline (unless its client sets ContextTimeoutEnabled), so an f
// waiting for a paused node goes on alone, up to its client's read
// timeout. Run one after another, inline, a quorum call's clean-ups (the
// leave of the paused node it waits on, then the give-back of what its
// look took on the others) held the give-back to two healthy nodes
// behind the paused one's read timeouts, and another Client's waiter
// with it, 10-24 s (TestAttackWakeOldestGoesAtRelease, "Close 2ms
// after").
func (cs *cleanups) runEach(bound time.Duration, items []int, f func(ctx context.Context, item int)) {
	cs.mu.Lock()
	if cs.stopped {
		if cs.late.n == 0 {
			cs.late.idle = make(chan struct{})
		}
		cs.late.n += len(items)
		cs.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), min(bound, undoTimeout))
		var wg sync.WaitGroup
		for _, i := range items {
			wg.Go(func() {
				defer cs.lateDone()
				f(ctx, i)
			})
		}
		done := make(chan struct{})
		go func() {
			wg.Wait()
			cancel()
			close(done)
		}()
		select {
		case <-done:
		case <-ctx.Done():
		}
		return
	}
	base := cs.base()
	cs.running.Add(len(items))
	cs.mu.Unlock()
	for _, i := range items {
		ctx, cancel := context.WithTimeout(base, bound)
		go func() {
			defer cs.running.Done()
			defer cancel()
			f(ctx, i)
		}()
	}
}

// lateDone counts a late run as returned.
func (cs *cleanups) lateDone() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.late.n--; cs.late.n == 0 {
		close(cs.late.idle)
	}
}

// waitLate waits until the late runs have returned, or ctx ends: those of
// Close's own releases, and of calls under way, so that none outlives
// Close while Close may still wait.
func (cs *cleanups) waitLate(ctx context.Context) {
	cs.mu.Lock()
	busy, idle := cs.late.n > 0, cs.late.idle
	cs.mu.Unlock()
	if !busy {
		return
	}
	select {
	case <-idle:
	case <-ctx.Done():
	}
}

// base is the ctx every clean-up's derives from, made at first use; cs.mu
// is held.
func (cs *cleanups) base() context.Context {
	if cs.ctx == nil {
		cs.ctx, cs.cancel = context.WithCancel(context.Background())
	}
	return cs.ctx
}

// stop makes every later run inline.
func (cs *cleanups) stop() {
	cs.mu.Lock()
	cs.stopped = true
	cs.mu.Unlock()
}

// wait waits for the runs started before stop until ctx ends, then
// cancels those left and waits for them to return.
func (cs *cleanups) wait(ctx context.Context) {
	cs.mu.Lock()
	cs.base()
	cancel := cs.cancel
	cs.mu.Unlock()
	stop := context.AfterFunc(ctx, cancel)
	cs.running.Wait()
	stop()
	cancel()
}
