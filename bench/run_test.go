package bench

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The whole harness, every algorithm on every scenario, on the embedded
// server: every run must take locks, and no two workers may ever hold one
// name at once.
func TestSuiteOnEmbeddedServer(t *testing.T) {
	target, stop, err := Embedded()
	require.NoError(t, err)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()

	var progress bytes.Buffer
	suite := Suite{Target: target, Algorithms: Algorithms(), Scenarios: Scenarios(300 * time.Millisecond), Progress: &progress}
	results, err := suite.Run(ctx)
	require.NoError(t, err)
	require.Len(t, results, len(suite.Algorithms)*len(suite.Scenarios))
	require.Contains(t, progress.String(), "[16/16]")

	for _, r := range results {
		require.Zero(t, r.Violations, "%s on %s", r.Algorithm, r.Scenario)
		require.Positive(t, r.Acquisitions, "%s on %s", r.Algorithm, r.Scenario)
		require.Positive(t, r.PingP50, "%s on %s", r.Algorithm, r.Scenario)
		require.Nil(t, r.ServerCommands, "miniredis has no commandstats")
		switch r.Scenario {
		case "uncontended":
			// One command to lock, one to unlock; a script load or two at most.
			require.InDelta(t, 2, r.ClientPerAcq, 0.1, r.Algorithm)
			require.Equal(t, 1.0, r.Fairness)
		case "hot-key":
			require.Positive(t, r.Handoffs, "eight workers on one name hand it over: %s", r.Algorithm)
		}
	}
}
