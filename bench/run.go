package bench

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/bench/redistest/redisproc"
)

// pingInterval spaces the pinger's round trips: often enough for a stable
// median, rarely enough to add nothing measurable to the load.
const pingInterval = 10 * time.Millisecond

// worker is one simulated process: its own Redis client and Locker (or
// RWLocker, or PermitLocker).
type worker struct {
	id  int
	rdb redis.UniversalClient
	// nodes, in a quorum scenario, are its clients of every node, rdb's
	// first; nil elsewhere.
	nodes  []redis.UniversalClient
	locker taker
	rng    *rand.Rand

	acquisitions int64
	waits        []time.Duration
	// In an RW scenario, the reads taken, and the waits of reads and of
	// writes apart (each also in waits).
	reads                 int64
	readWaits, writeWaits []time.Duration
	gaps                  []time.Duration
	pings                 pinged // the scenario's HolderPings, else none
}

// run is the worker's loop until ctx ends. A Lock that ctx cuts short still
// records its wait so far, so a worker starved for the whole run shows in the
// wait figures instead of vanishing from them.
func (w *worker) run(ctx context.Context, sc Scenario, names []string, rec *recorder) error {
	release := context.WithoutCancel(ctx) // a lock taken is always given back
	for {
		idx, req := sc.draw(w.id, w.rng)
		picked := make([]string, len(idx))
		for j, i := range idx {
			picked[j] = names[i]
		}
		start := time.Now()
		held, err := w.locker.take(ctx, picked, req)
		now := time.Now()
		w.noteWait(sc.Kind, req, now.Sub(start))
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("lock %q: %w", picked, err)
		}
		w.acquisitions++
		if sc.Kind == KindRW && !req.write {
			w.reads++
		}
		for _, i := range idx {
			// A set's names each have their own last release: no one gap
			// is the set's, so only a single name's hand-off is timed.
			if gap, ok := rec.acquired(i, w.id, req.weight, start, now); ok && len(idx) == 1 {
				w.gaps = append(w.gaps, gap)
			}
		}
		_ = sleep(ctx, sc.Hold) // the run ending cuts the hold short
		if sc.HolderPings && ctx.Err() == nil {
			w.pings.once(ctx, []redis.UniversalClient{w.rdb})
		}
		for _, i := range idx {
			rec.releasing(i, w.id, req.weight, time.Now())
		}
		if err := held.Unlock(release); err != nil {
			return fmt.Errorf("unlock %q: %w", picked, err)
		}
		if sleep(ctx, sc.Think) != nil {
			return nil
		}
	}
}

// noteWait records the wait of one acquisition, and in an RW scenario
// also among the reads' or the writes' waits.
func (w *worker) noteWait(k Kind, req request, wait time.Duration) {
	w.waits = append(w.waits, wait)
	switch {
	case k != KindRW:
	case req.write:
		w.writeWaits = append(w.writeWaits, wait)
	default:
		w.readWaits = append(w.readWaits, wait)
	}
}

// runOne runs algo on sc once. admin is the client for INFO and the pinger.
func runOne(ctx context.Context, t Target, admin redis.UniversalClient, algo Algorithm, sc Scenario) (Result, error) {
	prefix := fmt.Sprintf("bench:%s:%s:%d:", algo.Name, sc.Name, time.Now().UnixNano())
	names := make([]string, sc.Names)
	for i := range names {
		names[i] = "k" + strconv.Itoa(i)
	}
	var ack *ackRoundTrip
	if sc.Kind == KindReplicated {
		a, err := measureAck(ctx, admin, prefix+"ack")
		if err != nil {
			return Result{}, err
		}
		ack = &a
	}
	var sent commandCounter
	var wakes *WakeCounts
	if sc.Kind == KindSemaphore {
		wakes = &WakeCounts{}
	}
	workers, err := startWorkers(ctx, t, algo, sc, Env{Prefix: prefix, Count: sent.wrap, Permits: sc.Permits, Wakes: wakes}, &sent)
	defer stopWorkers(workers)
	if err != nil {
		return Result{}, err
	}

	servers := append([]redis.UniversalClient{admin}, openNodes(t, sc.Nodes)...)
	defer closeAll(servers[1:])
	statsBefore, statsErr := readAllCommands(ctx, servers)
	sentBefore, dialsBefore := sent.n.Load(), sent.dials.Load()
	failed, fail := context.WithCancelCause(ctx)
	defer fail(nil)
	runCtx, stop := context.WithTimeout(failed, sc.Duration)
	defer stop()
	rec := newRecorder(sc.Names, sc.capacity())
	rec.batches = sc.Writers > 0
	wakesPerGrant := make(chan *float64, 1)
	go func() { wakesPerGrant <- wakesAtEnd(runCtx, admin, wakes, statsBefore, statsErr) }()
	pinger := make(chan pinged, 1)
	if sc.HolderPings {
		pinger <- pinged{}
	} else {
		go func() { pinger <- ping(runCtx, servers) }()
	}

	elapsed, cpu := runWorkers(runCtx, workers, sc, names, rec, fail)
	stop()
	pings := <-pinger
	if err := context.Cause(failed); err != nil {
		return Result{}, err
	}

	var holders pinged // on the workers' clients, which count what they send
	for _, w := range workers {
		holders.add(w.pings)
	}
	pings.add(holders)
	r := summarize(algo.Name, sc, elapsed, workers, rec, pings.rtts)
	r.ClientCommands = sent.n.Load() - sentBefore - holders.sent
	r.ClientDials = sent.dials.Load() - dialsBefore
	r.ClientPerAcq = perAcquisition(r.ClientCommands, r.Acquisitions)
	// An embedded server's CPU, or a delay proxy's, is the process's own:
	// the figure would count it as the lock clients'.
	if cpu != nil && !t.Miniredis && t.RTT == 0 && r.Acquisitions > 0 {
		perAcq := *cpu / time.Duration(r.Acquisitions)
		r.CPUPerAcq = &perAcq
	}
	// A server without INFO commandstats (miniredis) leaves the server
	// figures n/a; the run itself is still valid.
	if statsAfter, err := readAllCommands(ctx, servers); statsErr == nil && err == nil && r.Acquisitions > 0 {
		d := serverCommands(statsBefore, statsAfter, pings.sent)
		r.ServerCommands = d.Calls // a plain map: the bench's API names no test tool
		r.ServerPerAcq = ratio(float64(d.Calls.Total()), float64(r.Acquisitions))
		r.ServerUsecPerAcq = ratio(float64(d.Usec.Total()), float64(r.Acquisitions))
	}
	r.WakeupsPerGrant = <-wakesPerGrant
	if ack != nil {
		lag := ack.ack - ack.ping
		r.AckP50, r.LagP50 = &ack.ack, &lag
	}
	return r, nil
}

// wakesAtEnd is the wake-ups per grant of a run, counted as soon as its
// time is up (runCtx ends), and nil without wakes. Not later: the waiters
// the end cuts short are granted what the last releases hand on, and give
// it back, which wakes them for no grant of the run.
func wakesAtEnd(runCtx context.Context, admin redis.UniversalClient, wakes *WakeCounts,
	before redisproc.Commands, beforeErr error) *float64 {
	<-runCtx.Done()
	if wakes == nil {
		return nil
	}
	var server map[string]int64
	after, err := readCommands(context.WithoutCancel(runCtx), admin)
	if beforeErr == nil && err == nil {
		server = serverCommands(before, after, 0).Calls
	}
	return wakes.perGrant(server)
}

// runWorkers runs the workers until ctx ends, failing the run with the first
// error, and returns how long they ran and the user+system CPU time the
// process used meanwhile (nil where the OS did not say).
func runWorkers(ctx context.Context, workers []*worker, sc Scenario, names []string, rec *recorder,
	fail context.CancelCauseFunc) (elapsed time.Duration, cpu *time.Duration) {
	cpuBefore, errBefore := processCPU()
	start := time.Now()
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() {
			if err := w.run(ctx, sc, names, rec); err != nil {
				fail(fmt.Errorf("worker %d: %w", w.id, err))
			}
		})
	}
	wg.Wait()
	elapsed = time.Since(start)
	if cpuAfter, errAfter := processCPU(); errBefore == nil && errAfter == nil {
		used := cpuAfter - cpuBefore
		cpu = &used
	}
	return elapsed, cpu
}

// nameSeed seeds each worker's choice of names. It is the same for every
// algorithm, so all of them see the same sequences of names and collisions.
const nameSeed = 0xba70

// startWorkers opens each worker's client (and in a quorum scenario, one
// on each node) and Locker, on env with the worker's clients, and makes one
// round trip on each client, so the run does not time the first dials.
func startWorkers(ctx context.Context, t Target, algo Algorithm, sc Scenario, env Env, sent *commandCounter) ([]*worker, error) {
	workers := make([]*worker, 0, sc.Workers)
	for id := range sc.Workers {
		w := &worker{id: id, rdb: t.NewClient(), rng: rand.New(rand.NewPCG(nameSeed, uint64(id)))}
		workers = append(workers, w)
		sent.attach(w.rdb)
		env.Client, env.Nodes = w.rdb, nil
		if sc.Nodes > 0 {
			w.nodes = append([]redis.UniversalClient{w.rdb}, openNodes(t, sc.Nodes)...)
			for _, n := range w.nodes[1:] {
				sent.attach(n)
			}
			env.Nodes = w.nodes
		}
		var err error
		if w.locker, err = newTaker(algo, sc.Kind, env); err != nil {
			return workers, err
		}
		for _, rdb := range w.clients() {
			if err := rdb.Ping(ctx).Err(); err != nil {
				return workers, err
			}
		}
	}
	return workers, nil
}

// clients are w's clients: its one, or in a quorum scenario one per node.
func (w *worker) clients() []redis.UniversalClient {
	if w.nodes != nil {
		return w.nodes
	}
	return []redis.UniversalClient{w.rdb}
}

func stopWorkers(workers []*worker) {
	for _, w := range workers {
		if w.locker.close != nil {
			_ = w.locker.close()
		}
		_ = w.rdb.Close()
		if len(w.nodes) > 0 {
			closeAll(w.nodes[1:])
		}
	}
}

// openNodes opens a client on each of t's first n nodes but the first,
// which NewClient reaches; none when n is 0, outside a quorum scenario.
func openNodes(t Target, n int) []redis.UniversalClient {
	var out []redis.UniversalClient
	for i := 1; i < n; i++ {
		out = append(out, t.Nodes[i]())
	}
	return out
}

func closeAll(clients []redis.UniversalClient) {
	for _, c := range clients {
		_ = c.Close()
	}
}

// pinged is the PING yardstick of a run: the round trips measured, and the
// PINGs sent, answered or not, since the server counts those too.
type pinged struct {
	rtts []time.Duration
	sent int64
}

// once sends one PING on each of rdbs, in parallel when there are
// several (a quorum's nodes), and times them until the last answers. A
// PING is never cut short by ctx: one cut short still runs on the server,
// and its dropped connection would redial inside the run.
func (p *pinged) once(ctx context.Context, rdbs []redis.UniversalClient) {
	p.sent += int64(len(rdbs))
	ctx = context.WithoutCancel(ctx)
	start := time.Now()
	if len(rdbs) == 1 {
		if rdbs[0].Ping(ctx).Err() == nil {
			p.rtts = append(p.rtts, time.Since(start))
		}
		return
	}
	errs := make(chan error, len(rdbs))
	for _, rdb := range rdbs {
		go func() { errs <- rdb.Ping(ctx).Err() }()
	}
	var failed error
	for range rdbs {
		failed = cmp.Or(<-errs, failed)
	}
	if failed == nil {
		p.rtts = append(p.rtts, time.Since(start))
	}
}

// add takes q's PINGs into p.
func (p *pinged) add(q pinged) {
	p.rtts = append(p.rtts, q.rtts...)
	p.sent += q.sent
}

// ping measures the round trip of PING on rdbs (see once) every
// pingInterval until ctx ends: the yardstick for the hand-off gap, taken
// under the same load.
func ping(ctx context.Context, rdbs []redis.UniversalClient) (p pinged) {
	for sleep(ctx, pingInterval) == nil {
		p.once(ctx, rdbs)
	}
	return p
}
