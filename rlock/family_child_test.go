package rlock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"time"
)

// familyWorkers is how many goroutines of one child run operations.
const familyWorkers = 2

// familyMembers are the members a child can play, by kind: a holder any,
// a "checker" child those with ops.
var familyMembers = map[string]familyMember{plainMember.kind: plainMember, rwMember.kind: rwMember,
	semMember.kind: semMember}

// familyOp is one random operation: it obtains holds, tells the checker
// (worker.took, worker.release), and gives them up. It returns only
// unexpected errors.
type familyOp func(w *familyWorker) error

// familyHold is a hold as the checker sees it.
type familyHold struct {
	mode    string // "r", "w", "p", as in its key fields
	owner   string
	weight  int64           // what it takes of the size
	ctx     context.Context // its Context: ends when it is lost
	release func(context.Context) error
	taken   bool // the checker was told of it
}

// field is h's field in the resource's keys: its lease's member.
func (h *familyHold) field() string { return h.mode + ":" + h.owner }

// familyWorker is one goroutine of a child, running operations.
type familyWorker struct {
	stop context.Context // ends when the child is told to stop
	rng  *rand.Rand
	k    *familyChecker
}

// runFamilyChild is the "checker" role: familyWorkers goroutines run the
// member's operations on one resource until stdin closes, and then give
// up what they hold. The counts go to the checker's keys, which outlive
// the process.
func runFamilyChild(in io.Reader) error {
	m, ok := familyMembers[os.Getenv(helperKind)]
	if !ok || m.ops == nil {
		return fmt.Errorf("no member %q", os.Getenv(helperKind))
	}
	lease, stop, cancel, err := childRun(in)
	if err != nil {
		return err
	}
	defer cancel()
	rdb, check := childClients()
	defer rdb.Close()
	defer check.Close()
	c, err := New(rdb, WithWatchdogLease(lease))
	if err != nil {
		return err
	}
	defer c.Close()
	name := os.Getenv(helperLock)
	k := newFamilyChecker(check, m, name)
	var workers sync.WaitGroup
	errs := make(chan error, familyWorkers)
	for range familyWorkers {
		w := &familyWorker{stop: stop, rng: rand.New(rand.NewPCG(rand.Uint64(), uint64(os.Getpid()))), k: k}
		ops := m.ops(c, name)
		workers.Go(func() { errs <- w.run(ops) })
	}
	workers.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

// untilClosed is a child's stop: a context that ends when in (its stdin)
// closes, or at cancel.
func untilClosed(in io.Reader) (stop context.Context, cancel context.CancelFunc) {
	stop, cancel = context.WithCancel(context.Background())
	go func() {
		_, _ = io.Copy(io.Discard, in)
		cancel()
	}()
	return stop, cancel
}

// run draws operations until the child is told to stop. An operation's
// unexpected error is recorded for the parent, not fatal; a checker's
// error ends the run.
func (w *familyWorker) run(ops []familyOp) error {
	for w.stop.Err() == nil {
		if err := ops[w.rng.IntN(len(ops))](w); err != nil {
			if err := w.k.failed(context.Background(), err); err != nil {
				return err
			}
		}
		if err := w.count("ops"); err != nil {
			return err
		}
	}
	return nil
}

func (w *familyWorker) count(what string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return w.k.count(ctx, what)
}

// leaseOpts is a hold's lease, drawn at random: the watchdog's, or a fixed
// one.
func (w *familyWorker) leaseOpts() []LockOption {
	if w.rng.IntN(2) == 0 {
		return nil
	}
	return []LockOption{WithLease(familyFixedLease)}
}

// shortly is a random short wait: a cancelled wait's, or WaitAtMost's.
func (w *familyWorker) shortly() time.Duration {
	return time.Millisecond * time.Duration(1+w.rng.IntN(20))
}

// hold sleeps a random hold time, far below any lease.
func (w *familyWorker) hold() { time.Sleep(time.Duration(w.rng.IntN(3000)) * time.Microsecond) }

// obtained is the end of an attempt to obtain: ErrNotObtained (a wait
// cancelled or bounded, a try refused) is counted, and no error.
func (w *familyWorker) obtained(err error) error {
	if errors.Is(err, ErrNotObtained) {
		return w.count("notobtained")
	}
	return err
}

// holdTaker obtains one hold of a member, of a mode and weight it fixes,
// as the checker sees it; it returns the call's own error.
type holdTaker func(ctx context.Context, opts ...LockOption) (*familyHold, error)

// How familyOnce waits: as long as it takes, until its ctx is cancelled a
// short while on (while it waits or while it holds), or at most a short
// while (WaitAtMost).
const (
	familyWaits = iota
	familyCancelled
	familyBounded
)

// familyOnce takes one hold with take, waiting as how says, holds it a
// while and gives it up.
func familyOnce(take holdTaker, how int) familyOp {
	return func(w *familyWorker) error {
		ctx, cancel := context.WithCancel(w.stop)
		opts := w.leaseOpts()
		switch how {
		case familyCancelled:
			ctx, cancel = context.WithTimeout(w.stop, w.shortly())
		case familyBounded:
			opts = append(opts, WaitAtMost(w.shortly()))
		}
		defer cancel()
		h, err := w.takeHold(take, ctx, opts...)
		if h == nil {
			return err
		}
		w.hold()
		return w.release(h)
	}
}

// takeHold obtains a hold with take and tells the checker; a hold not
// obtained is nil, with an error only when that was unexpected.
func (w *familyWorker) takeHold(take holdTaker, ctx context.Context, opts ...LockOption) (*familyHold, error) {
	h, err := take(ctx, opts...)
	if err != nil {
		return nil, w.obtained(err)
	}
	return h, w.took(h)
}

// took tells the checker of h, just obtained, while its Context is alive;
// one already lost is only counted.
func (w *familyWorker) took(h *familyHold) error {
	if context.Cause(h.ctx) != nil {
		return nil // its loss is counted at its release
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h.taken = true
	return w.k.take(ctx, h.field(), h.weight)
}

// release tells the checker h is given up, then gives it up. A hold found
// lost (its Context's cause, or its release's error) is counted.
func (w *familyWorker) release(h *familyHold) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lost := errors.Is(context.Cause(h.ctx), ErrLockLost)
	if h.taken {
		if err := w.k.give(ctx, h.field()); err != nil {
			return err
		}
	}
	err := h.release(ctx)
	if errors.Is(err, ErrLockLost) {
		lost, err = true, nil
	}
	if lost {
		return errors.Join(err, w.count("lost"))
	}
	return err
}
