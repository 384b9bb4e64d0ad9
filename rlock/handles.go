package rlock

// handleList is a hold's handles that have not finished, linked through
// the handles themselves, so that taking a lock allocates no set for them.
// The hold's mu guards it and the links.
type handleList struct {
	head *Lock
	n    int
}

// add puts l, which is in no list, in the list.
func (hl *handleList) add(l *Lock) {
	l.prev, l.next = nil, hl.head
	if hl.head != nil {
		hl.head.prev = l
	}
	hl.head = l
	hl.n++
}

// remove takes l out of the list; a handle that is not in it is left
// alone.
func (hl *handleList) remove(l *Lock) {
	switch {
	case l.prev != nil:
		l.prev.next = l.next
	case hl.head == l:
		hl.head = l.next
	default:
		return
	}
	if l.next != nil {
		l.next.prev = l.prev
	}
	l.prev, l.next = nil, nil
	hl.n--
}

// all lists the handles.
func (hl *handleList) all() []*Lock {
	out := make([]*Lock, 0, hl.n)
	for l := hl.head; l != nil; l = l.next {
		out = append(out, l)
	}
	return out
}
