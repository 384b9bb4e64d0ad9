package rlock

import (
	"testing"
	"time"
)

// A look that met another call of its owner waits one to two times its
// answering nodes' time, doubled per such look in a row, whether its
// next look was otherwise due at once (a failed commit, soon 0) or at no
// known time (soon -1); a holder's lease running out sooner bounds it;
// a look that met none is due at soon, and starts the doubling again.
func TestUntilNextLook(t *testing.T) {
	r := &quorumLock{}
	const took = time.Millisecond
	for i, want := range []time.Duration{took, 2 * took, 4 * took} {
		got := r.untilNextLook(0, true, took)
		if got < want || got > 2*want {
			t.Fatalf("meeting %d, due at once: waits %v, want %v to %v", i, got, want, 2*want)
		}
	}
	if got := r.untilNextLook(-1, false, took); got != -1 {
		t.Fatalf("no meeting: due at %v, want soon (-1)", got)
	}
	if got := r.untilNextLook(-1, true, took); got < took || got > 2*took {
		t.Fatalf("first meeting after none: waits %v, want %v to %v", got, took, 2*took)
	}
	if got := r.untilNextLook(took/2, true, took); got != took/2 {
		t.Fatalf("a holder's lease ending in %v: waits %v", took/2, got)
	}
}
