package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/bench/redistest/redisproc"
)

// scriptPairs is how many acquire and release calls the script cost is
// measured over: commandstats counts whole microseconds per call, and 50
// calls average that rounding out to a tenth of a microsecond or so.
const scriptPairs = 50

// ScriptCost is the server time of one algorithm's calls of one hold, an
// acquire and a release measured apart (see CallCost), on a free name,
// one call at a time, with INFO commandstats read around each call, after
// a first pair that loads the scripts.
type ScriptCost struct {
	Algorithm string `json:"algorithm"`
	// Hold is what was taken: "lock", "read", "write" or "permit".
	Hold    string   `json:"hold"`
	Acquire CallCost `json:"acquire"`
	Release CallCost `json:"release"`
}

// CallCost is the server's work for one call, averaged over the calls
// measured: the scripts it ran (EVALSHA and EVAL) and their time, and the
// time of every command it sent, scripts included.
type CallCost struct {
	ScriptsPerCall float64 `json:"scripts_per_call"`
	// UsecPerScript is the server time of one script call (commandstats
	// usec, which includes the commands the script runs); n/a (null)
	// when the call ran no script.
	UsecPerScript *float64 `json:"usec_per_script"`
	UsecPerCall   float64  `json:"server_usec_per_call"`
}

// holdsOf are the holds an algorithm's calls take in a scenario of kind k.
func holdsOf(k Kind) []request {
	switch k {
	case KindRW:
		return []request{{weight: 1}, {weight: 2, write: true}}
	}
	return []request{{weight: 1}}
}

func holdName(k Kind, r request) string {
	switch {
	case k == KindSemaphore:
		return "permit"
	case k == KindRW && r.write:
		return "write"
	case k == KindRW:
		return "read"
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
	l, err := newTaker(algo, k, Env{Client: rdb, Prefix: prefix, Permits: 2})
	if err != nil {
		return nil, err
	}
	defer func() { _ = l.close() }()
	var out []ScriptCost
	for _, req := range holdsOf(k) {
		// A first pair loads the scripts (NOSCRIPT, then EVAL) and dials:
		// one-off costs, left out.
		held, err := l.take(ctx, "free", req)
		if err != nil {
			return nil, err
		}
		if err := held.Unlock(ctx); err != nil {
			return nil, err
		}
		var acquire, release redisproc.Commands
		for range scriptPairs {
			var held Held
			a, err := serverWork(ctx, admin, func() (err error) { held, err = l.take(ctx, "free", req); return err })
			if err != nil {
				return nil, err
			}
			r, err := serverWork(ctx, admin, func() error { return held.Unlock(ctx) })
			if err != nil {
				return nil, err
			}
			acquire, release = add(acquire, a), add(release, r)
		}
		out = append(out, ScriptCost{Algorithm: algo.Name, Hold: holdName(k, req),
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

func add(sum, d redisproc.Commands) redisproc.Commands {
	if sum.Calls == nil {
		sum = redisproc.Commands{Calls: redisproc.CommandStats{}, Usec: redisproc.CommandStats{}}
	}
	for k, v := range d.Calls {
		sum.Calls[k] += v
	}
	for k, v := range d.Usec {
		sum.Usec[k] += v
	}
	return sum
}

// callCost is the CallCost of scriptPairs calls that made c.
func callCost(c redisproc.Commands) CallCost {
	scripts := c.Calls["evalsha"] + c.Calls["eval"]
	return CallCost{
		ScriptsPerCall: float64(scripts) / scriptPairs,
		UsecPerScript:  ratio(float64(c.Usec["evalsha"]+c.Usec["eval"]), float64(scripts)),
		UsecPerCall:    float64(c.Usec.Total()) / scriptPairs,
	}
}
