package bench

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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
		case "hot-key":
			require.Positive(t, r.Handoffs, "eight workers on one name hand it over: %s", r.Algorithm)
		}
	}
}

// alwaysGrant is a broken lock: every Lock succeeds at once. The harness
// must see the overlaps it allows.
type alwaysGrant struct{}

func (alwaysGrant) Lock(context.Context, string) (Held, error) { return alwaysGrant{}, nil }
func (alwaysGrant) Unlock(context.Context) error               { return nil }
func (alwaysGrant) Close() error                               { return nil }

func TestSuiteCountsViolationsOfABrokenLock(t *testing.T) {
	target, stop, err := Embedded()
	require.NoError(t, err)
	defer stop()
	broken := Algorithm{Name: "broken", New: func(redis.UniversalClient, string) (Locker, error) { return alwaysGrant{}, nil }}
	hot := Scenario{Name: "hot", Workers: 8, Hold: time.Millisecond, Names: 1, Duration: 200 * time.Millisecond}
	results, err := Suite{Target: target, Algorithms: []Algorithm{broken}, Scenarios: []Scenario{hot}}.Run(context.Background())
	require.NoError(t, err)
	require.Positive(t, results[0].Violations, "eight holders of one name at once")
}

func TestSuiteRejectsABadScenarioBeforeRunning(t *testing.T) {
	target, stop, err := Embedded()
	require.NoError(t, err)
	defer stop()
	good := Scenario{Name: "good", Workers: 1, Names: 1, Duration: time.Hour}
	bad := Scenario{Name: "bad", Workers: 0, Names: 1, Duration: time.Second}
	start := time.Now()
	_, err = Suite{Target: target, Algorithms: Algorithms(), Scenarios: []Scenario{good, bad}}.Run(context.Background())
	require.ErrorContains(t, err, `"bad"`)
	require.Less(t, time.Since(start), time.Minute, "the good scenario did not run first")
}
