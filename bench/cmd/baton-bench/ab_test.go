package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// abRows are the table rows of an A/B's output by their first two cells:
// "1 baton", "median redsync".
func abRows(out string) (order []string, rows map[string][]string) {
	rows = map[string][]string{}
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) < 4 || (f[0] != "median" && strings.Trim(f[0], "0123456789") != "") {
			continue
		}
		order = append(order, f[0]+" "+f[1])
		rows[f[0]+" "+f[1]] = f[2:]
	}
	return order, rows
}

// Each library runs in a process of its own in every round: baton's
// fencing counters, left behind under prefixes that name the process,
// show two processes for two rounds, neither of them the test's.
func TestABRunsEachLibraryInAFreshProcessPerRound(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	o := options{ab: true, addr: srv.Addr, rounds: 2, pairs: 20}
	require.NoError(t, run(ctx, o, map[string]bool{"ab": true, "addr": true, "rounds": true, "pairs": true}, &stdout, &stderr),
		stderr.String())

	order, rows := abRows(stdout.String())
	require.Equal(t, []string{
		"1 baton", "1 redislock-1ms", "1 redsync",
		"2 redislock-1ms", "2 redsync", "2 baton",
		"median baton", "median redislock-1ms", "median redsync",
	}, order, "the default libraries, rotated in round 2:\n%s", stdout.String())
	for row, cells := range rows {
		want := 4 // wall, CPU, and baton's two ratios to the library
		if strings.HasSuffix(row, " baton") {
			want = 2
		}
		require.Len(t, cells, want, row)
	}
	require.Contains(t, stdout.String(), "20 uncontended Lock+Unlock pairs per library per round")
	require.Contains(t, stderr.String(), "Redis at "+srv.Addr)

	keys, err := srv.Admin().Keys(ctx, "bench:ab:baton:*").Result()
	require.NoError(t, err)
	pids := map[string]bool{}
	for _, k := range keys {
		pids[strings.Split(k, ":")[3]] = true
	}
	require.Len(t, pids, 2, "keys %v", keys)
	require.NotContains(t, pids, strconv.Itoa(os.Getpid()))
}

func TestABStartsAThrowawayServerAndStopsIt(t *testing.T) {
	redistest.Binary(t) // run starts a server of its own
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	o := options{ab: true, rounds: 1, pairs: 5, algos: "redislock-1ms,baton"}
	require.NoError(t, run(ctx, o, map[string]bool{"ab": true, "rounds": true, "pairs": true, "algos": true}, &stdout, &stderr),
		stderr.String())
	require.Contains(t, stderr.String(), "throwaway redis-server on 127.0.0.1:")
	order, _ := abRows(stdout.String())
	require.Equal(t, []string{"1 redislock-1ms", "1 baton", "median redislock-1ms", "median baton"}, order)
	require.Empty(t, redisChildren(t), "the server is gone")
}

func TestABRefusesWhatItCannotDo(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		o    options
		set  []string
		want string
	}{
		{options{ab: true, scenarios: "hot-key"}, []string{"scenarios"}, "-scenarios does not apply to -ab"},
		{options{ab: true, cluster: "127.0.0.1:7000"}, []string{"cluster"}, "-cluster does not apply to -ab"},
		{options{ab: true, miniredis: true}, []string{"miniredis"}, "-miniredis does not apply to -ab"},
		{options{ab: true, pairs: 0}, []string{"pairs"}, "at least 1"},
		{options{ab: true, pairs: 10, rounds: 0}, []string{"rounds"}, "at least 1"},
		{options{ab: true, pairs: 10, algos: "redsync"}, []string{"algos"}, "baton"},
		{options{ab: true, pairs: 10, addr: "127.0.0.1:1", url: "redis://127.0.0.1:1"}, []string{"addr", "url"}, "at most one"},
		{options{pairs: 10}, []string{"pairs"}, "-pairs applies to -ab only"},
	} {
		set := map[string]bool{}
		for _, f := range tc.set {
			set[f] = true
		}
		require.ErrorContains(t, run(ctx, tc.o, set, io.Discard, io.Discard), tc.want, "%+v", tc.o)
	}
	_, err := urlTarget("", "http://nowhere", "")
	require.Error(t, err)
	target, err := urlTarget("", "redis://127.0.0.1:1/2", "")
	require.NoError(t, err)
	require.Equal(t, "Redis at 127.0.0.1:1", target.Name)
	rdb := target.NewClient().(*redis.Client)
	defer rdb.Close()
	require.Equal(t, 2, rdb.Options().DB)
}
