package rlock

import "sync"

// handleSet is a hold's handles that have not finished, linked through the
// handles themselves, so that taking a lock allocates no set for them; how
// many of them have not begun to unlock; and the set's closing. Closing
// the set decides the hold's end: a closed set takes no handle, and its
// cause is why the hold ended. The set is the only owner of its members'
// membership.
type handleSet struct {
	mu       sync.Mutex // guards the set: head, n, live, closedBy, and its members' membership
	head     *handle
	n        int   // handles in the list
	live     int   // handles that have not begun to unlock
	closedBy error // the hold's end cause; nil while the set is open
}

// membership is a handle's place in its hold's handleSet, which alone reads
// and writes it, under the set's mu.
type membership struct {
	prev, next *handle // in the set's list, until finished
	unlocking  bool    // Unlock has begun: the handle is no longer live
	finished   bool    // out of the set: released, or ended with its hold
}

// add puts l, a new handle, in the set, unless the set is closed: then it
// returns the end cause, as endCause does.
func (s *handleSet) add(l *handle) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closedBy != nil {
		return s.endCauseLocked()
	}
	l.member.prev, l.member.next = nil, s.head
	if s.head != nil {
		s.head.member.prev = l
	}
	s.head = l
	s.n++
	s.live++
	return nil
}

// beginUnlock marks l as unlocking. began says this call did, finished
// that l had already finished (and nothing changed).
func (s *handleSet) beginUnlock(l *handle) (began, finished bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.member.finished {
		return false, true
	}
	if l.member.unlocking {
		return false, false
	}
	l.member.unlocking = true
	s.live--
	return true, false
}

// leave takes l out of the set, finished. left is false if l had finished
// before (and nothing changed). When l was the last handle of an open
// set, the leave closes it, released (errReleased), and last is true: the
// caller ends the hold. cause is the set's closing cause before the leave.
func (s *handleSet) leave(l *handle) (left, last bool, cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.member.finished {
		return false, false, nil
	}
	l.member.finished = true
	s.unlink(l)
	cause = s.closedBy
	last = s.n == 0 && cause == nil
	if last {
		s.closedBy = errReleased
	}
	return true, last, cause
}

// close closes the set with cause, unless it is closed, and returns the
// handles in it. closed says whether this call closed it.
func (s *handleSet) close(cause error) (cut []*handle, closed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closedBy != nil {
		return nil, false
	}
	s.closedBy = cause
	cut = make([]*handle, 0, s.n)
	for l := s.head; l != nil; l = l.member.next {
		cut = append(cut, l)
	}
	return cut, true
}

// givenUp reports whether every handle has begun to unlock: an end found
// then is the release's, or a lease running out on a hold being given up,
// and no loss.
func (s *handleSet) givenUp() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live == 0
}

// endCause is why the hold ended, as a call that needs the hold sees it:
// a hold whose handles have all begun to unlock is not held (ErrNotHeld).
// It is nil while the set is open.
func (s *handleSet) endCause() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endCauseLocked()
}

// checkReentry says why a re-entry through via cannot be made: the hold's end
// cause, or ErrNotHeld once via has finished; nil if it can.
func (s *handleSet) checkReentry(via *handle) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.endCauseLocked(); err != nil {
		return err
	}
	if via.member.finished {
		return ErrNotHeld
	}
	return nil
}

func (s *handleSet) endCauseLocked() error {
	if s.closedBy == errReleased {
		return ErrNotHeld
	}
	return s.closedBy
}

// unlink takes l out of the list; a handle that is not in it is left
// alone. s.mu is held.
func (s *handleSet) unlink(l *handle) {
	switch {
	case l.member.prev != nil:
		l.member.prev.member.next = l.member.next
	case s.head == l:
		s.head = l.member.next
	default:
		return
	}
	if l.member.next != nil {
		l.member.next.member.prev = l.member.prev
	}
	l.member.prev, l.member.next = nil, nil
	s.n--
}
