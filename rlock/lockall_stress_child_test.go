package rlock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/bench/redistest"
)

// The child side of the LockAll stress test (lockall_stress_test.go): one
// process, one Client, stressWorkers goroutines taking random sets.

const (
	// helperChecker is the address of the stress test's checker server.
	helperChecker = "BATON_TEST_CHECKER"
	// stressWorkers is how many goroutines of one child take sets.
	stressWorkers = 8
	// stressNames is how many lock names the sets are drawn from, and
	// stressMin and stressMax bound a set's size.
	stressNames, stressMin, stressMax = 12, 2, 8
	// stressCallBound bounds every LockAll and Unlock: a call still
	// running then did not complete, which the test reports.
	stressCallBound = 30 * time.Second
)

// stressName is the lock name of index i.
func stressName(i int) string { return "stress" + strconv.Itoa(i) }

// stressClientName names the connections of the child with pid: the
// parent waits for exactly those to close after a SIGKILL.
func stressClientName(pid int) string { return childClientName + "-" + strconv.Itoa(pid) }

// childRun is what a child of a multi-process test takes from its
// environment and stdin: its watchdog lease, and a context that ends when
// stdin closes (the parent's word to stop).
func childRun(in io.Reader) (lease time.Duration, stop context.Context, cancel context.CancelFunc, err error) {
	if lease, err = time.ParseDuration(os.Getenv(helperLease)); err != nil {
		return 0, nil, nil, err
	}
	stop, cancel = untilClosed(in)
	return lease, stop, cancel, nil
}

// stressChild is one child: its Client on the lock server, and its
// connection to the checker server.
type stressChild struct {
	c    *Client
	k    *stressChecker
	stop context.Context // ends when stdin closes: no new call starts
}

// runStressChild is the "lockall" role: stressWorkers goroutines take
// random sets until stdin closes; each then finishes the call it is in,
// which must complete within stressCallBound.
func runStressChild(in io.Reader) error {
	lease, stop, cancel, err := childRun(in)
	if err != nil {
		return err
	}
	defer cancel()
	o := redistest.Options(os.Getenv(helperAddr))
	o.ClientName = stressClientName(os.Getpid())
	rdb := redis.NewClient(o)
	defer rdb.Close()
	check := redis.NewClient(&redis.Options{Addr: os.Getenv(helperChecker)})
	defer check.Close()
	c, err := New(rdb, WithWatchdogLease(lease))
	if err != nil {
		return err
	}
	defer c.Close()
	ch := &stressChild{c: c, k: &stressChecker{rdb: check, pid: os.Getpid()}, stop: stop}
	if err := ch.k.joined(c.id); err != nil {
		return err
	}
	go ch.k.watchStalls(stop)
	var workers sync.WaitGroup
	errs := make([]error, stressWorkers)
	for i := range stressWorkers {
		rng := rand.New(rand.NewPCG(rand.Uint64(), uint64(os.Getpid())))
		workers.Go(func() { errs[i] = ch.work(rng) })
	}
	workers.Wait()
	return errors.Join(errs...)
}

// work runs operations until the child is told to stop. An operation's
// unexpected error goes to the checker; the checker's own ends the run.
func (ch *stressChild) work(rng *rand.Rand) error {
	for ch.stop.Err() == nil {
		if err := ch.once(rng); err != nil {
			if err := ch.k.failed(err); err != nil {
				return err
			}
		}
	}
	return nil
}

// once takes a random set, tells the checker, holds it up to a
// millisecond, tells the checker it gives it up, and unlocks it; then it
// records the call's wait.
func (ch *stressChild) once(rng *rand.Rand) error {
	idx := rng.Perm(stressNames)[:stressMin+rng.IntN(stressMax-stressMin+1)]
	names := make([]string, len(idx))
	for i, n := range idx {
		names[i] = stressName(n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), stressCallBound)
	defer cancel()
	start := time.Now()
	s, err := ch.c.LockAll(ctx, names)
	end := time.Now()
	if err != nil {
		return fmt.Errorf("LockAll %v after %v: %w", names, end.Sub(start), err)
	}
	tokens := make([]uint64, len(names))
	for i, n := range names {
		tokens[i] = s.Token(n)
	}
	took := ch.k.take(names, tokens)
	time.Sleep(time.Duration(rng.IntN(1000)) * time.Microsecond)
	gave := ch.k.give(names, tokens)
	if err := s.Unlock(ctx); err != nil {
		return errors.Join(fmt.Errorf("Unlock %v: %w", names, err), took, gave)
	}
	return errors.Join(took, gave, ch.k.op(start, end, len(names)))
}
