package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench"
	"github.com/batonlock/baton/bench/redistest"
)

// -quorum runs the quorum scenarios, and only those, with the quorum's
// contestants, on bench.MaxQuorumNodes servers of its own, each behind a
// delay proxy with -rtt (the pinger's PINGs and every Lock go through
// them), and stops them all; it prints the second round's cost and refuses
// a server of the user's.
func TestQuorumRunStartsItsNodesBehindProxies(t *testing.T) {
	redistest.Binary(t) // run starts servers of its own
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const rtt = 2 * time.Millisecond
	o := options{quorum: true, rtt: rtt, duration: 100 * time.Millisecond, rounds: 1, out: t.TempDir()}
	all, err := selectScenarios(o, map[string]bool{})
	require.NoError(t, err)
	require.Equal(t, bench.QuorumRTTScenarios(), names(all, func(s bench.Scenario) string { return s.Name }), "-quorum -rtt's default")
	o.rtt = 0
	all, err = selectScenarios(o, map[string]bool{})
	require.NoError(t, err)
	require.Equal(t, bench.QuorumScenarios(o.duration), all, "-quorum's default")
	o.rtt = rtt
	o.scenarios = "uncontended-q3,uncontended-q5"
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(ctx, o, map[string]bool{}, &stdout, &stderr))
	require.Empty(t, redisChildren(t), "the servers are gone")
	require.Contains(t, stderr.String(), "5 throwaway redis-servers on 127.0.0.1")
	require.Contains(t, stdout.String(), "the quorum token's second round")
	fitIn100Columns(t, stdout.String()+stderr.String())

	rep := readReport(t, o.out)
	require.Len(t, rep.Results, 2*len(bench.QuorumAlgorithms()))
	for _, r := range rep.Results {
		require.True(t, strings.HasPrefix(r.Scenario, "uncontended-q"), r.Scenario)
		require.GreaterOrEqual(t, r.PingP50, 2*rtt, "the pinger goes through the proxies: %s", r.Algorithm)
		require.GreaterOrEqual(t, time.Duration(float64(time.Second)/r.AcqPerSec), 4*rtt, "Lock and Unlock do: %s", r.Algorithm)
	}

	for _, bad := range []options{{quorum: true, addr: "127.0.0.1:1"}, {quorum: true, miniredis: true}} {
		_, _, err := connect(bad, false)
		require.ErrorContains(t, err, "-quorum", "%+v", bad)
	}
	_, err = selectAlgorithms(bench.QuorumAlgorithms(), "redislock-1ms")
	require.Error(t, err, "only the quorum's contestants")
}
