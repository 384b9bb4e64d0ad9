package rlock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// familyWorkers is how many goroutines of one child run operations,
// unless helperWorkers says otherwise.
const familyWorkers = 2

// familyHoldTime bounds a hold's random hold time, unless helperHold says
// otherwise: far below any lease.
const familyHoldTime = 3 * time.Millisecond

// The checker child's settings beyond the holder's (child_test.go).
const (
	helperWorkers = "BATON_TEST_WORKERS" // how many workers; familyWorkers if unset
	helperHold    = "BATON_TEST_HOLD"    // the bound of a hold's hold time; familyHoldTime if unset
	// helperAcks is WithReplicaAcks's timeout for 1 acknowledgement, "0s"
	// for WithReplicaAcks(0, 0); the default acknowledgements if unset.
	helperAcks = "BATON_TEST_ACKS"
)

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
	stop    context.Context // ends when the child is told to stop
	rng     *rand.Rand
	k       *familyChecker // of the resource of the operation under way
	maxHold time.Duration  // bounds hold's hold time
	fixed   time.Duration  // the fixed lease of the holds that take one
}

// familyResource is one resource a child's workers operate on: its
// checker, and the operations on it.
type familyResource struct {
	k   *familyChecker
	ops []familyOp
}

// familyChildConfig is how a checker child runs, from its environment.
type familyChildConfig struct {
	m       familyMember
	names   []string // helperLock, comma-separated: the resources
	opts    []Option
	workers int
	maxHold time.Duration
	fixed   time.Duration // helperFixed; familyFixedLease if unset
}

// readFamilyChildConfig reads the checker child's settings.
func readFamilyChildConfig() (familyChildConfig, error) {
	cfg := familyChildConfig{names: strings.Split(os.Getenv(helperLock), ","), workers: familyWorkers,
		maxHold: familyHoldTime, fixed: familyFixedLease}
	var ok bool
	if cfg.m, ok = familyMembers[os.Getenv(helperKind)]; !ok || cfg.m.ops == nil {
		return cfg, fmt.Errorf("no member %q", os.Getenv(helperKind))
	}
	lease, err := time.ParseDuration(os.Getenv(helperLease))
	if err != nil {
		return cfg, err
	}
	cfg.opts = []Option{WithWatchdogLease(lease)}
	if v := os.Getenv(helperWorkers); v != "" {
		cfg.workers, err = strconv.Atoi(v)
	}
	if v := os.Getenv(helperHold); v != "" && err == nil {
		cfg.maxHold, err = time.ParseDuration(v)
	}
	if v := os.Getenv(helperFixed); v != "" && err == nil {
		cfg.fixed, err = time.ParseDuration(v)
	}
	if v := os.Getenv(helperAcks); v != "" && err == nil {
		var timeout time.Duration
		timeout, err = time.ParseDuration(v)
		n := 0
		if timeout > 0 {
			n = 1
		}
		cfg.opts = append(cfg.opts, WithReplicaAcks(n, timeout))
	}
	return cfg, err
}

// runFamilyChild is the "checker" role: workers goroutines run the
// member's operations, each on one of the resources drawn at random,
// until stdin closes, and then give up what they hold. The counts go to
// the checker's keys, which outlive the process.
func runFamilyChild(in io.Reader) error {
	cfg, err := readFamilyChildConfig()
	if err != nil {
		return err
	}
	stop, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, in)
		cancel()
	}()
	rdb, check := childClients()
	defer rdb.Close()
	defer check.Close()
	c, err := New(rdb, cfg.opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	var workers sync.WaitGroup
	errs := make(chan error, cfg.workers)
	for range cfg.workers {
		w := &familyWorker{stop: stop, rng: rand.New(rand.NewPCG(rand.Uint64(), uint64(os.Getpid()))),
			maxHold: cfg.maxHold, fixed: cfg.fixed}
		var res []familyResource
		for _, name := range cfg.names {
			res = append(res, familyResource{k: newFamilyChecker(check, cfg.m, name), ops: cfg.m.ops(c, name)})
		}
		workers.Go(func() { errs <- w.run(res) })
	}
	workers.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

// run draws a resource and an operation on it until the child is told to
// stop. An operation's unexpected error is recorded for the parent, not
// fatal, and the worker pauses shortly: Redis may be failing over. A
// checker's error ends the run.
func (w *familyWorker) run(res []familyResource) error {
	for w.stop.Err() == nil {
		r := res[w.rng.IntN(len(res))]
		w.k = r.k
		if err := r.ops[w.rng.IntN(len(r.ops))](w); err != nil {
			if err := w.k.failed(context.Background(), err); err != nil {
				return err
			}
			time.Sleep(w.shortly())
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
	return []LockOption{WithLease(w.fixed)}
}

// shortly is a random short wait: a cancelled wait's, or WaitAtMost's.
func (w *familyWorker) shortly() time.Duration {
	return time.Millisecond * time.Duration(1+w.rng.IntN(20))
}

// hold waits a random hold time below maxHold, or until ctx, the hold's
// Context, ends: a holder told it lost its hold gives it up.
func (w *familyWorker) hold(ctx context.Context) {
	select {
	case <-time.After(rand.N(w.maxHold)):
	case <-ctx.Done():
	}
}

// obtained is the end of an attempt to obtain: ErrNotObtained (a wait
// cancelled or bounded, a try refused, a grant not acknowledged by
// replicas) is counted, and no error.
func (w *familyWorker) obtained(err error) error {
	switch {
	case errors.Is(err, ErrNotReplicated):
		return w.count("notreplicated")
	case errors.Is(err, ErrNotObtained):
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
		w.hold(h.ctx)
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
	return errors.Join(w.k.take(ctx, h.field(), h.weight), w.k.count(ctx, "held"))
}

// release tells the checker h is given up, then gives it up. A hold found
// lost (its Context's cause, or its release's error) is counted, with why.
func (w *familyWorker) release(h *familyHold) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cause := context.Cause(h.ctx)
	if h.taken {
		if err := w.k.give(ctx, h.field()); err != nil {
			return err
		}
	}
	err := h.release(ctx)
	if errors.Is(err, ErrLockLost) {
		if !errors.Is(cause, ErrLockLost) {
			cause = err // found by the release, not before
		}
		err = nil
	}
	if errors.Is(cause, ErrLockLost) {
		return errors.Join(err, w.k.lost(ctx, cause))
	}
	return err
}
