package rlock

import (
	"context"
	"sync"
	"time"

	"github.com/batonlock/baton/reentrant"
)

// undoTimeout bounds each clean-up of a call that failed, or of a grant
// nobody will use.
const undoTimeout = time.Second

// failed handles an acquire that returned err: it may have run, so giving
// it back happens in the background, and the caller's ctx bounds the call,
// not the clean-up, which may wait for an unreachable Redis.
func (a *attempt) failed(ctx context.Context, err error, requestID string, w reentrant.Waiter) error {
	if !isServerReply(err) {
		a.c.background.run(func() {
			a.leave(w)
			a.undo(requestID)
		})
	}
	if ctx.Err() != nil {
		return a.waitError(ctx.Err())
	}
	return err
}

// undo gives back an acquire whose reply was lost: it may or may not have
// run. Replaying the same request ID tells which, and holds it either way;
// one release then restores the count from before the call. If Redis stays
// unreachable the lease frees the resource instead.
func (a *attempt) undo(requestID string) {
	ctx, cancel := context.WithTimeout(context.Background(), undoTimeout)
	defer cancel()
	var token uint64
	if a.via != nil {
		token = a.via.hold.token
	}
	res, err := a.acquireAs(ctx, requestID, token, reentrant.Waiter{})
	if err == nil && res.Acquired {
		releaseRetrying(ctx, a.res, a.owner, res.Token)
	}
}

// release gives back one count of owner's hold of token, bounded in time.
func (a *attempt) release(owner string, token uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), undoTimeout)
	defer cancel()
	releaseRetrying(ctx, a.res, owner, token)
}

// releaseRetrying gives back one count of owner's hold of token on res,
// resending the release under one request ID (which replays it) while its
// reply is lost, until ctx ends. A clean-up has no caller to retry it:
// a release lost once would leave the hold in Redis, with no hold in any
// table, until its lease ran out, and every waiter behind it waiting.
func releaseRetrying(ctx context.Context, res resource, owner string, token uint64) {
	id := newRequestID()
	for {
		_, err := res.release(ctx, owner, token, id)
		if err == nil || isServerReply(err) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Millisecond):
		}
	}
}

// leave takes w out of the queue, bounded in time; if it was granted the
// resource meanwhile, the same script passes it on.
func (a *attempt) leave(w reentrant.Waiter) {
	if w.ID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), undoTimeout)
	defer cancel()
	_ = a.res.leave(ctx, w, a.owner, a.lease, a.newOwner)
}

// giveBack releases a grant of token that arrived dead, so that it passes
// on at once. If the release cannot be confirmed within ctx it goes on in
// the background, and a call with an owner of its own takes a new one: its
// next look must not find the dead grant and report it as its own.
func (a *attempt) giveBack(ctx context.Context, token uint64) {
	if _, err := a.res.release(ctx, a.owner, token, newRequestID()); err == nil {
		return
	}
	owner := a.owner
	a.c.background.run(func() { a.release(owner, token) })
	if a.newOwner {
		a.owner = a.c.newOwner()
	}
}

// cleanups runs the clean-ups above in the background, where the call
// that needs one must not wait for it; Close waits for them.
type cleanups struct {
	mu      sync.Mutex // guards stopped, so that no clean-up is added once Close waits
	stopped bool
	running sync.WaitGroup
}

// run runs f, which must end on its own soon, on a goroutine that Close
// waits for. Once Close has begun, f runs inline instead.
func (cs *cleanups) run(f func()) {
	cs.mu.Lock()
	if cs.stopped {
		cs.mu.Unlock()
		f()
		return
	}
	cs.running.Add(1)
	cs.mu.Unlock()
	go func() {
		defer cs.running.Done()
		f()
	}()
}

// stop makes every later run inline, and wait then waits for the runs
// started before.
func (cs *cleanups) stop() {
	cs.mu.Lock()
	cs.stopped = true
	cs.mu.Unlock()
}

func (cs *cleanups) wait() { cs.running.Wait() }
