package rlock

import (
	"context"
	"sync"
)

// turns order the re-entries through each of a hold's handles: at most one
// re-entry through a handle's Context is held, or being taken, at a time.
// So goroutines forked from one Context take turns, while a nested call
// through the innermost handle, whose turn is free, never waits. The wait
// is local and sends nothing.
type turns struct {
	mu   sync.Mutex    // guards the turns: every handle's turnTaken, and over
	over chan struct{} // closed when a turn may have come free; nil if nobody waits
}

// take takes via's turn if it is free, or else returns the channel that
// closes when it may have come free.
func (t *turns) take(via *handle) (taken bool, over <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !via.turnTaken {
		via.turnTaken = true
		return true, nil
	}
	if t.over == nil {
		t.over = make(chan struct{})
	}
	return false, t.over
}

// giveBack frees via's turn, and wakes the calls waiting for a turn.
func (t *turns) giveBack(via *handle) {
	t.mu.Lock()
	via.turnTaken = false
	t.wakeLocked()
	t.mu.Unlock()
}

// finished gives back the turn that finished handle l took of the handle
// it re-entered through, if any, and wakes the calls waiting for a turn:
// those through l fail now that it has finished.
func (t *turns) finished(l *handle) {
	if l.parent != nil {
		t.giveBack(l.parent)
		return
	}
	t.wake()
}

// wake wakes the calls waiting for a turn, to look again.
func (t *turns) wake() {
	t.mu.Lock()
	t.wakeLocked()
	t.mu.Unlock()
}

func (t *turns) wakeLocked() {
	if t.over != nil {
		close(t.over)
		t.over = nil
	}
}

// takeTurn waits until no other re-entry through via is held, then takes
// via's turn. It fails with the hold's end cause, with ErrNotHeld once via
// has finished, or with ctx's error. A re-entry that fails gives the turn
// back with giveTurnBack; one that succeeds gives it back when its handle
// finishes.
func (h *hold) takeTurn(ctx context.Context, via *handle) error {
	for {
		taken, over := h.turns.take(via)
		// Looked at after take: an end or a finish that comes later wakes
		// over, so the wait below cannot miss it.
		if err := h.handles.checkReentry(via); err != nil {
			if taken {
				h.turns.giveBack(via)
			}
			return err
		}
		if taken {
			return nil
		}
		select {
		case <-over:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// giveTurnBack gives back the turn takeTurn took, for a re-entry through
// via that did not happen.
func (h *hold) giveTurnBack(via *handle) { h.turns.giveBack(via) }
