package rlock

import (
	"context"
)

// takeTurn waits until no other re-entry through via is held, then
// reserves the turn: goroutines that re-enter through one Context take
// turns, while a nested call through the innermost handle never waits. The
// wait is local and sends nothing. release gives the turn back if the
// re-entry fails.
func (h *hold) takeTurn(ctx context.Context, via *Lock) error {
	for {
		h.mu.Lock()
		switch {
		case h.end != nil:
			h.mu.Unlock()
			return h.endLocked()
		case via.finished:
			h.mu.Unlock()
			return ErrNotHeld
		case via.children == 0:
			via.children++
			h.mu.Unlock()
			return nil
		}
		if h.turnOver == nil {
			h.turnOver = make(chan struct{})
		}
		turn := h.turnOver
		h.mu.Unlock()
		select {
		case <-turn:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// giveTurnBack undoes takeTurn for a re-entry that did not happen.
func (h *hold) giveTurnBack(via *Lock) {
	h.mu.Lock()
	via.children--
	h.passTurnLocked()
	h.mu.Unlock()
}

// passTurnLocked wakes re-entries waiting for their turn. h.mu is held.
func (h *hold) passTurnLocked() {
	if h.turnOver != nil {
		close(h.turnOver)
		h.turnOver = nil
	}
}
