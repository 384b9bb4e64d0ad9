package rlockotel_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/goleak"

	"github.com/batonlock/baton/reentrant/redistest"
	"github.com/batonlock/baton/rlock"
	"github.com/batonlock/baton/rlock/rlockotel"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A scripted scenario against a real server, then exact counts: a free
// acquire, a re-entry, a wait that ends in a hand-off, releases, renewals
// and a loss.
func TestMetricsOfAScenario(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := redistest.Start(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(ctx)
	obs, err := rlockotel.Observer(mp, rlockotel.WithLockName())
	require.NoError(t, err)
	c, err := rlock.New(srv.Client(), rlock.WithObserver(obs), rlock.WithWatchdogLease(150*time.Millisecond))
	require.NoError(t, err)
	defer c.Close()
	other, err := rlock.New(srv.Client())
	require.NoError(t, err)
	defer other.Close()

	l, err := c.Lock(ctx, "report") // free
	require.NoError(t, err)
	inner, err := c.Lock(l.Context(), "report") // reentered
	require.NoError(t, err)
	require.NoError(t, inner.Unlock(ctx))
	got := make(chan error, 1)
	go func() {
		w, err := c.Lock(ctx, "report") // waits, handed off
		if err == nil {
			err = w.Unlock(ctx)
		}
		got <- err
	}()
	require.Eventually(t, func() bool { return srv.Admin().LLen(ctx, "baton:{report}:queue").Val() == 1 },
		5*time.Second, time.Millisecond)
	time.Sleep(200 * time.Millisecond) // a renewal round or two
	require.NoError(t, l.Unlock(ctx))
	require.NoError(t, <-got)

	lost, err := c.Lock(ctx, "lost")
	require.NoError(t, err)
	_, err = other.ForceUnlock(ctx, "lost")
	require.NoError(t, err)
	require.ErrorIs(t, lost.Unlock(ctx), rlock.ErrLockLost)

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(ctx, &rm))
	sums := map[string]map[string]int64{}
	var waits []metricdata.HistogramDataPoint[float64]
	for _, sm := range rm.ScopeMetrics {
		require.Equal(t, rlockotel.MeterName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				sums[m.Name] = map[string]int64{}
				for _, p := range d.DataPoints {
					sums[m.Name][label(p.Attributes)] += p.Value
				}
			case metricdata.Histogram[float64]:
				waits = d.DataPoints
			}
		}
	}
	require.Equal(t, map[string]int64{
		"kind=free lock=report": 1, "kind=reentered lock=report": 1, "kind=handed off lock=report": 1,
		"kind=free lock=lost": 1,
	}, sums["baton.lock.acquisitions"])
	require.Equal(t, map[string]int64{"lock=report": 3}, sums["baton.lock.releases"])
	require.Equal(t, map[string]int64{"lock=lost": 1}, sums["baton.lock.losses"])
	require.Positive(t, sums["baton.lock.renewals"][""])
	require.Len(t, waits, 1)
	require.EqualValues(t, 1, waits[0].Count)
	require.Equal(t, "lock=report outcome=acquired", label(waits[0].Attributes))
	require.Greater(t, waits[0].Sum, 0.1, "the wait lasted while the renewals ran")
}

// label is a metric point's attributes as "k=v k=v", sorted.
func label(set attribute.Set) string {
	s := ""
	for _, kv := range set.ToSlice() {
		if s != "" {
			s += " "
		}
		s += string(kv.Key) + "=" + kv.Value.Emit()
	}
	return s
}
