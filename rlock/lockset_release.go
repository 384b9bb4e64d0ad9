package rlock

import (
	"context"
	"errors"

	"github.com/batonlock/baton/reentrant"
)

// Unlock gives back every member's count of its hold, one script call per
// group (per slot on a cluster; one on a single node): the release of a
// member's last hold hands that lock to its own next waiter. The set's
// Context ends first. Each member's answer is Lock.Unlock's, and Unlock
// returns them joined: nil once every release is confirmed; ErrLockLost
// for a member lost while held (the rest are released all the same);
// ErrNotHeld if the set was unlocked before; a transport error leaves the
// members unlocking, and calling Unlock again replays the first releases.
func (s *LockSet) Unlock(ctx context.Context) error {
	s.unlockMu.Lock()
	defer s.unlockMu.Unlock()
	_ = s.ctx.Err() // a member's end due by the clock is its loss, seen now
	s.ctx.cancel(context.Canceled)
	ctx, cancel := unlockContext(ctx)
	defer cancel()
	errs, _ := s.release(ctx)
	return errors.Join(errs...)
}

// setRelease is one script call of a set's release: the members it
// releases, which one script may touch, and its request ID.
type setRelease struct {
	members []int // indexes in the set's members
	request string
}

// release begins the unlock of every member (beginRelease), sends the
// releases of those to be sent, one script call per group, and finishes
// each with its answer (finishRelease). It returns the members' answers
// that are errors, and the first error that left a release unanswered:
// a retry replays it. A retry sends what the first call sent, under the
// same request IDs, so that each replays whole.
func (s *LockSet) release(ctx context.Context) (errs []error, unanswered error) {
	type begun struct{ send, ended bool }
	state := make([]begun, len(s.members))
	for i, m := range s.members {
		m.unlockMu.Lock()
		defer m.unlockMu.Unlock()
		send, ended, err := m.beginRelease()
		state[i] = begun{send, ended}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if s.sent == nil {
		s.sent = s.releases(func(i int) bool { return state[i].send })
	}
	for _, r := range s.sent {
		holds := make([]reentrant.SetHold, len(r.members))
		for k, i := range r.members {
			h := s.members[i].hold
			holds[k] = reentrant.SetHold{Keys: h.res.(*plainLock).keys, Owner: h.owner, Token: h.id}
		}
		res, err := reentrant.ReleaseSet(ctx, s.c.rdb, holds, r.request)
		if err != nil && !isServerReply(err) && unanswered == nil {
			unanswered = err
		}
		for k, i := range r.members {
			if !state[i].send {
				continue
			}
			var answer reentrant.ReleaseResult
			if err == nil {
				answer = res[k]
			}
			if err := s.members[i].finishRelease(answer, err, state[i].ended); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs, unanswered
}

// releases groups the members for which send is true into release script
// calls, as groupsOf groups locks.
func (s *LockSet) releases(send func(i int) bool) []setRelease {
	var idx []int
	var locks []*plainLock
	for i, m := range s.members {
		if send(i) {
			idx = append(idx, i)
			locks = append(locks, m.hold.res.(*plainLock))
		}
	}
	var out []setRelease
	for _, g := range s.c.groupsOf(locks) {
		out = append(out, setRelease{members: idx[g.from:g.to], request: newRequestID()})
	}
	return out
}
