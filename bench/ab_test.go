package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

func TestRunPairsOnARealServer(t *testing.T) {
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rdb.Close()
	for _, algo := range Algorithms()[:4] { // baton, redsync, redsync-1ms, redislock-1ms
		run, err := RunPairs(testCtx(t), algo, rdb, "bench:pairs:"+algo.Name+":", 20)
		require.NoError(t, err, algo.Name)
		require.Equal(t, PairRun{Algorithm: algo.Name, Pairs: 20, Wall: run.Wall, CPU: run.CPU}, run)
		require.Positive(t, run.Wall, algo.Name)
		require.Positive(t, run.CPU, algo.Name)
		require.Equal(t, run.Wall/20, run.WallPerPair())
		require.Equal(t, run.CPU/20, run.CPUPerPair())
	}
	_, err := RunPairs(testCtx(t), Algorithms()[0], rdb, "bench:pairs:none:", 0)
	require.ErrorContains(t, err, "at least 1")
}

// fakeChildren runs no process: each library's per-pair figures are fixed,
// scaled by the round, so every round's ratios are the same.
func fakeChildren(calls *[]string) func(context.Context, string) (PairRun, error) {
	perPair := map[string][2]time.Duration{ // wall, CPU
		BatonName:       {150 * time.Microsecond, 60 * time.Microsecond},
		"redislock-1ms": {100 * time.Microsecond, 50 * time.Microsecond},
		"redsync":       {120 * time.Microsecond, 40 * time.Microsecond},
	}
	return func(_ context.Context, algo string) (PairRun, error) {
		*calls = append(*calls, algo)
		scale := time.Duration(1 + (len(*calls)-1)/3) // the round, for three libraries
		f := perPair[algo]
		return PairRun{Algorithm: algo, Pairs: 10, Wall: 10 * scale * f[0], CPU: 10 * scale * f[1]}, nil
	}
}

func abAlgorithms(names ...string) []Algorithm {
	var out []Algorithm
	for _, n := range names {
		out = append(out, Algorithm{Name: n})
	}
	return out
}

func TestABRotatesAndComparesWithBaton(t *testing.T) {
	target, stop, err := Embedded()
	require.NoError(t, err)
	defer stop()
	var calls []string
	var progress bytes.Buffer
	ab := AB{Target: target, Algorithms: abAlgorithms(BatonName, "redislock-1ms", "redsync"), Rounds: 3, Pairs: 10,
		RunChild: fakeChildren(&calls), Progress: &progress}
	rep, err := ab.Run(testCtx(t))
	require.NoError(t, err)
	require.Equal(t, []string{
		BatonName, "redislock-1ms", "redsync",
		"redislock-1ms", "redsync", BatonName,
		"redsync", BatonName, "redislock-1ms",
	}, calls, "each round rotated by one")
	require.Len(t, rep.Rounds, 3)
	require.Equal(t, 10, rep.Pairs)
	require.Equal(t, 3, rep.Meta.Rounds)
	require.Len(t, strings.Split(strings.TrimSpace(progress.String()), "\n"), 9)

	var buf bytes.Buffer
	require.NoError(t, WriteAB(&buf, rep))
	out := buf.String()
	require.Contains(t, out, "10 uncontended Lock+Unlock pairs per library per round")
	require.Contains(t, out, MiniredisCaveat)
	rows := map[string][]string{}
	for line := range strings.Lines(out) {
		if f := strings.Fields(line); len(f) >= 4 && (f[0] == "median" || f[0] == "1" || f[0] == "2" || f[0] == "3") {
			rows[f[0]+" "+f[1]] = f[2:]
		}
	}
	require.Len(t, rows, 12, "a row per run and a median row per library:\n%s", out)
	require.Equal(t, []string{"150µs", "60µs"}, rows["1 baton"], "no ratio to itself")
	require.Equal(t, []string{"200µs", "100µs", "1.50×", "1.20×"}, rows["2 redislock-1ms"], "baton÷redislock, same round")
	require.Equal(t, []string{"240µs", "80µs", "1.25×", "1.50×"}, rows["2 redsync"])
	require.Equal(t, []string{"1.50×", "1.20×"}, rows["median redislock-1ms"][2:], "the rounds' ratios")
	require.Equal(t, []string{"300µs", "120µs"}, rows["median baton"], "150, 300 and 450µs in rounds 1, 2 and 3")
}

func TestABNeedsBaton(t *testing.T) {
	target, stop, err := Embedded()
	require.NoError(t, err)
	defer stop()
	var calls []string
	_, err = AB{Target: target, Algorithms: abAlgorithms("redislock-1ms", "redsync"), RunChild: fakeChildren(&calls)}.Run(testCtx(t))
	require.ErrorContains(t, err, "baton")
	require.Empty(t, calls)
}
