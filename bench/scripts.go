package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/bench/redistest/redisproc"
)

// scriptPairs is how many acquire and release calls the script cost is
// measured over; commandstats counts whole microseconds per call.
const scriptPairs = 51

// ScriptCost is the server time of one algorithm's calls of one hold, an
// acquire and a release measured apart (see CallCost), on a free name,
// one call at a time, with INFO commandstats read around each call, after
// a first pair that loads the scripts.
type ScriptCost struct {
	Algorithm string `json:"algorithm"`
	// Hold is what was taken: "lock", "read", "write", "permit" or, for
	// a multi-lock, "set of 4".
	Hold    string   `json:"hold"`
	Acquire CallCost `json:"acquire"`
	Release CallCost `json:"release"`
}

// CallCost is the server's work for one call, over the calls measured:
// the scripts it ran (EVALSHA and EVAL) on average, the median time of
// one script run, and the median time of every command a call sent,
// scripts included. Medians, since a server preempted during a call (on
// a loaded machine) counts that time as the call's.
type CallCost struct {
	ScriptsPerCall float64 `json:"scripts_per_call"`
	// UsecPerScript is the server time of one script run (commandstats
	// usec, which includes the commands the script runs), in whole
	// microseconds or halves; n/a (null) when the calls ran no script.
	UsecPerScript *float64 `json:"usec_per_script"`
	UsecPerCall   float64  `json:"server_usec_per_call"`
}

// hold is one kind of hold whose calls are measured: the free names it
// takes, and what it asks of each.
type hold struct {
	names []string
	req   request
}

// scriptSet is the set a multi-lock's calls are measured on: 4 names, the
// mean size of the multi-lock scenario's sets, with no hash tag, so that a
// multi-lock that works slot by slot makes its calls in each of (mostly)
// 4 slots.
var scriptSet = []string{"free-a", "free-b", "free-c", "free-d"}

// holdsOf are the holds an algorithm's calls take in a scenario of kind k.
func holdsOf(k Kind) []hold {
	free := []string{"free"}
	switch k {
	case KindRW:
		return []hold{{free, request{weight: 1}}, {free, request{weight: 2, write: true}}}
	case KindMulti:
		return []hold{{scriptSet, request{weight: 1}}}
	}
	return []hold{{free, request{weight: 1}}}
}

func holdName(k Kind, h hold) string {
	switch {
	case k == KindSemaphore:
		return "permit"
	case k == KindMulti:
		return fmt.Sprintf("set of %d", len(h.names))
	case k == KindRW && h.req.write:
		return "write"
	case k == KindRW:
		return "read"
	case k == KindQuorum:
		return quorumHold
	}
	return "lock"
}

// measureScripts measures the ScriptCost of algo's holds of kind k on t,
// or returns nil when the server has no commandstats (miniredis).
func measureScripts(ctx context.Context, t Target, admin redis.UniversalClient, algo Algorithm, k Kind) ([]ScriptCost, error) {
	if _, err := readCommands(ctx, admin); err != nil {
		return nil, nil
	}
	rdb := t.NewClient()
	defer rdb.Close()
	prefix := fmt.Sprintf("bench:%s:scripts:%d:", algo.Name, time.Now().UnixNano())
	env := Env{Client: rdb, Prefix: prefix, Permits: 2}
	if k == KindQuorum { // on the fewest nodes; admin counts the first's share
		env.Nodes = append([]redis.UniversalClient{rdb}, openNodes(t, minQuorumNodes)...)
		defer closeAll(env.Nodes[1:])
	}
	l, err := newTaker(algo, k, env)
	if err != nil {
		return nil, err
	}
	defer func() { _ = l.close() }()
	var out []ScriptCost
	for _, h := range holdsOf(k) {
		// A first pair loads the scripts (NOSCRIPT, then EVAL) and dials:
		// one-off costs, left out.
		held, err := l.take(ctx, h.names, h.req)
		if err != nil {
			return nil, err
		}
		if err := held.Unlock(ctx); err != nil {
			return nil, err
		}
		var acquire, release []redisproc.Commands
		for range scriptPairs {
			var held Held
			a, err := serverWork(ctx, admin, func() (err error) { held, err = l.take(ctx, h.names, h.req); return err })
			if err != nil {
				return nil, err
			}
			r, err := serverWork(ctx, admin, func() error { return held.Unlock(ctx) })
			if err != nil {
				return nil, err
			}
			acquire, release = append(acquire, a), append(release, r)
		}
		out = append(out, ScriptCost{Algorithm: algo.Name, Hold: holdName(k, h),
			Acquire: callCost(acquire), Release: callCost(release)})
	}
	return out, nil
}

// serverWork runs call and returns the commands the server ran meanwhile,
// INFO's own calls left out.
func serverWork(ctx context.Context, admin redis.UniversalClient, call func() error) (redisproc.Commands, error) {
	before, err := readCommands(ctx, admin)
	if err != nil {
		return redisproc.Commands{}, err
	}
	if err := call(); err != nil {
		return redisproc.Commands{}, err
	}
	after, err := readCommands(ctx, admin)
	if err != nil {
		return redisproc.Commands{}, err
	}
	return serverCommands(before, after, 0), nil
}

// callCost is the CallCost of calls: scripts per call on average, and
// the medians of the server times, which a server preempted during one
// call (a loaded machine) does not move.
func callCost(calls []redisproc.Commands) CallCost {
	var scripts int64
	var perScript []float64
	perCall := make([]float64, len(calls))
	for i, c := range calls {
		n := c.Calls["evalsha"] + c.Calls["eval"]
		scripts += n
		if n > 0 {
			perScript = append(perScript, float64(c.Usec["evalsha"]+c.Usec["eval"])/float64(n))
		}
		perCall[i] = float64(c.Usec.Total())
	}
	cost := CallCost{ScriptsPerCall: float64(scripts) / float64(len(calls)), UsecPerCall: median(perCall)}
	if len(perScript) > 0 {
		m := median(perScript)
		cost.UsecPerScript = &m
	}
	return cost
}
