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

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/bench/redistest"
)

// helperNodes is the environment of a "quorum" child (runQuorumChild): the
// addresses of its quorum's nodes, comma-separated. helperAddr is then the
// ledger's server, a redis-server of its own.
const helperNodes = "BATON_TEST_NODES"

// helperMajority, when set, is the majority a "quorum" child's Client
// takes its holds on instead of ⌊N/2⌋+1: a control (1) switches the
// protection off, and the same run must then find overlaps.
const helperMajority = "BATON_TEST_MAJORITY"

// The ledger's keys, on its own server: every hold's start, every end, the
// children's unexpected errors, and their counts.
const (
	ledgerStarts = "quorumledger:starts" // "<hold> <token> <start ns>"
	ledgerEnds   = "quorumledger:ends"   // "<hold> <end ns> <live>"
	ledgerErrors = "quorumledger:errors"
	ledgerCounts = "quorumledger:counts"
)

// runQuorumChild is the "quorum" role: familyWorkers goroutines take the
// lock of one name on a quorum of the nodes helperNodes names, again and
// again, until stdin closes, and write each hold to the ledger: its token
// and the wall-clock time its Lock returned with its Context live, then
// the time its hold ended (just before Unlock) and whether its Context was
// still live then. The ledger outlives the process.
func runQuorumChild(in io.Reader) error {
	lease, err := time.ParseDuration(os.Getenv(helperLease))
	if err != nil {
		return err
	}
	stop, cancel := untilClosed(in)
	defer cancel()
	var nodes []redis.UniversalClient
	for _, addr := range strings.Split(os.Getenv(helperNodes), ",") {
		o := redistest.Options(addr)
		o.ClientName = childClientName
		nodes = append(nodes, redis.NewClient(o))
	}
	defer closeClients(nodes)
	ledger := redis.NewClient(&redis.Options{Addr: os.Getenv(helperAddr), ClientName: childClientName})
	defer ledger.Close()
	c, err := NewQuorum(nodes, WithWatchdogLease(lease))
	if err != nil {
		return err
	}
	defer c.Close()
	if m := os.Getenv(helperMajority); m != "" {
		if c.quorum.majority, err = strconv.Atoi(m); err != nil {
			return err
		}
	}
	var workers sync.WaitGroup
	for i := range familyWorkers {
		w := &quorumWorker{c: c, ledger: ledger, name: os.Getenv(helperLock), stop: stop,
			id: strconv.Itoa(os.Getpid()) + "." + strconv.Itoa(i), rng: rand.New(rand.NewPCG(rand.Uint64(), uint64(i)))}
		workers.Go(w.run)
	}
	workers.Wait()
	return nil
}

func closeClients(clients []redis.UniversalClient) {
	for _, c := range clients {
		_ = c.Close()
	}
}

// quorumWorker is one goroutine of a quorum child.
type quorumWorker struct {
	c      *Client
	ledger *redis.Client
	name   string
	stop   context.Context
	id     string // pid.worker: with a sequence number, a hold's name
	seq    int
	rng    *rand.Rand
}

// run takes and gives up holds until the child is told to stop. Errors
// go to the ledger: the parent fails the test on them.
func (w *quorumWorker) run() {
	for w.stop.Err() == nil {
		if err := w.once(); err != nil {
			w.note(func(ctx context.Context) error { return w.ledger.RPush(ctx, ledgerErrors, w.id+": "+err.Error()).Err() })
		}
	}
}

// note writes to the ledger, which is never down.
func (w *quorumWorker) note(write func(ctx context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := write(ctx); err != nil {
		panic(fmt.Sprintf("the ledger failed: %v", err)) // the run is void
	}
}

func (w *quorumWorker) count(what string) {
	w.note(func(ctx context.Context) error { return w.ledger.HIncrBy(ctx, ledgerCounts, what, 1).Err() })
}

// once takes the lock, waiting without bound, until a ctx cancelled a
// short while on, or at most a short while (WaitAtMost), holds it up to
// 3 ms, and gives it up; it returns only unexpected errors.
func (w *quorumWorker) once() error {
	ctx, cancel := context.WithCancel(w.stop)
	var opts []LockOption
	switch w.rng.IntN(3) {
	case 1:
		ctx, cancel = context.WithTimeout(w.stop, time.Duration(1+w.rng.IntN(20))*time.Millisecond)
	case 2:
		opts = append(opts, WaitAtMost(time.Duration(1+w.rng.IntN(20))*time.Millisecond))
	}
	defer cancel()
	l, err := w.c.Lock(ctx, w.name, opts...)
	if err != nil {
		if errors.Is(err, ErrNotObtained) || w.stop.Err() != nil {
			w.count("notobtained")
			return nil
		}
		return err
	}
	w.seq++
	hold := w.id + "." + strconv.Itoa(w.seq)
	start := time.Now()
	if l.Context().Err() == nil {
		w.note(func(ctx context.Context) error {
			return w.ledger.RPush(ctx, ledgerStarts, fmt.Sprintf("%s %d %d", hold, l.Token(), start.UnixNano())).Err()
		})
		time.Sleep(time.Duration(w.rng.IntN(3000)) * time.Microsecond)
		end := time.Now()
		live := l.Context().Err() == nil // after end: live then means live at end
		w.note(func(ctx context.Context) error {
			return w.ledger.RPush(ctx, ledgerEnds, fmt.Sprintf("%s %d %t", hold, end.UnixNano(), live)).Err()
		})
	}
	w.count("holds")
	release, cancelRelease := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelRelease()
	switch err := l.Unlock(release); {
	case errors.Is(err, ErrLockLost):
		w.count("lost")
	case bareMajorityLoss(err):
		w.count("unlock-noquorum")
	case err != nil:
		return fmt.Errorf("unlock: %w", err)
	}
	return nil
}

// bareMajorityLoss says whether err is an Unlock's ErrNoQuorum naming one
// node alone: the documented limit of a hold that was not on every live
// node (README, Quorum mode, "What it tolerates": a grant given back
// late, or a node's part lost to a pause longer than the lease) when one
// of its nodes is out. The fault loop has one node out at a time, so with
// the others answering only that limit names one node; two named nodes
// are a defect.
func bareMajorityLoss(err error) bool {
	return errors.Is(err, ErrNoQuorum) && strings.Count(err.Error(), "; node ") == 1
}
