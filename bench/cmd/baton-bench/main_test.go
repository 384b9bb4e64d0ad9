package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench"
)

func TestSelectScenariosAppliesOnlyExplicitOverrides(t *testing.T) {
	o := options{duration: bench.DefaultDuration, workers: 5, hold: 2 * time.Millisecond}
	all, err := selectScenarios(o, map[string]bool{})
	require.NoError(t, err)
	require.Equal(t, bench.Scenarios(bench.DefaultDuration), all, "flags at their zero defaults change nothing")

	o.scenarios = "storm,hot-key"
	got, err := selectScenarios(o, map[string]bool{"workers": true, "hold": true})
	require.NoError(t, err)
	require.Len(t, got, 2)
	for i, name := range []string{"storm", "hot-key"} {
		require.Equal(t, name, got[i].Name, "in the order asked")
		require.Equal(t, 5, got[i].Workers)
		require.Equal(t, 2*time.Millisecond, got[i].Hold)
		require.Equal(t, 1, got[i].Names, "not overridden")
	}
}

func TestSelectScenariosDefaults(t *testing.T) {
	got, err := selectScenarios(options{duration: time.Second, quick: true}, map[string]bool{})
	require.NoError(t, err)
	require.Equal(t, quickDuration, got[0].Duration)
	got, err = selectScenarios(options{duration: time.Second, quick: true}, map[string]bool{"duration": true})
	require.NoError(t, err)
	require.Equal(t, time.Second, got[0].Duration, "an explicit -duration wins over -quick")

	got, err = selectScenarios(options{duration: time.Second, cluster: "127.0.0.1:7000"}, map[string]bool{})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, "many-keys", got[0].Name, "a cluster runs the scenario that spreads over slots")

	_, err = selectScenarios(options{scenarios: "hot-key,lukewarm"}, map[string]bool{})
	require.ErrorContains(t, err, `"lukewarm"`)
	_, err = selectAlgorithms("baton,poll-2ms")
	require.ErrorContains(t, err, `"poll-2ms"`)
}
