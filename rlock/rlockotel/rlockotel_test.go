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

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/rlock"
	"github.com/batonlock/baton/rlock/rlockotel"
)

func TestMain(m *testing.M) {
	redistest.RequireInstalled()
	goleak.VerifyTestMain(m)
}

// A scripted scenario against a real server, then exact counts: a free
// acquire, a re-entry, a wait that ends in a hand-off, releases, renewals
// and a loss.
func TestMetricsOfAScenario(t *testing.T) {
	ctx, srv, reader := setup(t)
	c := newClient(t, srv, reader, []rlockotel.Option{rlockotel.WithLockName()}, rlock.WithWatchdogLease(150*time.Millisecond))
	other := newClient(t, srv, nil, nil)

	l, err := c.Lock(ctx, "report") // free
	require.NoError(t, err)
	inner, err := c.Lock(l.Context(), "report") // reentered
	require.NoError(t, err)
	require.NoError(t, inner.Unlock(ctx))
	waited := make(chan error, 1)
	go func() {
		w, err := c.Lock(ctx, "report") // waits, handed off
		if err == nil {
			err = w.Unlock(ctx)
		}
		waited <- err
	}()
	require.Eventually(t, func() bool { return srv.Admin().LLen(ctx, "baton:{report}:queue").Val() == 1 },
		5*time.Second, time.Millisecond)
	time.Sleep(200 * time.Millisecond) // a renewal round or two
	require.NoError(t, l.Unlock(ctx))
	require.NoError(t, <-waited)

	lost, err := c.Lock(ctx, "lost")
	require.NoError(t, err)
	_, err = other.ForceUnlock(ctx, "lost")
	require.NoError(t, err)
	require.ErrorIs(t, lost.Unlock(ctx), rlock.ErrLockLost)

	got := collect(ctx, t, reader)
	sums := got.sums
	require.Equal(t, map[string]int64{
		"kind=free lock=report": 1, "kind=reentered lock=report": 1, "kind=handed_off lock=report": 1,
		"kind=free lock=lost": 1,
	}, sums["baton.lock.acquisitions"])
	require.Equal(t, map[string]int64{"lock=report": 3}, sums["baton.lock.releases"])
	require.Equal(t, map[string]int64{"lock=lost": 1}, sums["baton.lock.losses"])
	require.Positive(t, sums["baton.lock.renewals"][""])
	require.Empty(t, sums["baton.lock.renewal.failures"], "no renewal failed")
	waits := got.waits
	require.Len(t, waits, 1)
	require.EqualValues(t, 1, waits[0].Count)
	require.Equal(t, "lock=report outcome=acquired", label(waits[0].Attributes))
	require.Greater(t, waits[0].Sum, 0.1, "the wait lasted while the renewals ran")
	require.Equal(t, []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		waits[0].Bounds, "buckets in seconds")
	require.Equal(t, map[string]string{
		"baton.lock.wait.duration": "s", "baton.lock.acquisitions": "{acquisition}", "baton.lock.releases": "{release}",
		"baton.lock.renewals": "{renewal}", "baton.lock.losses": "{loss}",
	}, got.units, "renewal.failures has no point: nothing failed")
}

// By default the lock name is no attribute (it would make a series per
// name), and a bounded wait that runs out is recorded as timed_out.
func TestNoLockNameByDefaultAndATimedOutWait(t *testing.T) {
	ctx, srv, reader := setup(t)
	c := newClient(t, srv, reader, nil)
	other := newClient(t, srv, nil, nil)

	held, err := other.Lock(ctx, "busy")
	require.NoError(t, err)
	_, err = c.TryLock(ctx, "busy", rlock.WaitAtMost(50*time.Millisecond))
	require.ErrorIs(t, err, rlock.ErrNotObtained)
	require.NoError(t, held.Unlock(ctx))
	l, err := c.TryLock(ctx, "busy")
	require.NoError(t, err)
	require.NoError(t, l.Unlock(ctx))

	got := collect(ctx, t, reader)
	require.Equal(t, map[string]int64{"kind=free": 1}, got.sums["baton.lock.acquisitions"])
	require.Equal(t, map[string]int64{"": 1}, got.sums["baton.lock.releases"])
	require.Len(t, got.waits, 1)
	require.EqualValues(t, 1, got.waits[0].Count)
	require.Equal(t, "outcome=timed_out", label(got.waits[0].Attributes))
	require.GreaterOrEqual(t, got.waits[0].Sum, 0.05)
}

// setup bounds the test and starts a server and a reader.
func setup(t *testing.T) (context.Context, *redistest.Server, *sdkmetric.ManualReader) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx, redistest.Start(t), sdkmetric.NewManualReader()
}

// newClient returns a Client, closed at the end of the test, observed into
// reader when reader is not nil.
func newClient(t *testing.T, srv *redistest.Server, reader sdkmetric.Reader, otelOpts []rlockotel.Option, opts ...rlock.Option) *rlock.Client {
	t.Helper()
	if reader != nil {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
		obs, err := rlockotel.Observer(mp, otelOpts...)
		require.NoError(t, err)
		opts = append(opts, rlock.WithObserver(obs))
	}
	c, err := rlock.New(srv.Client(), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// collected is what a reader collected: counter sums by instrument and
// label, the wait histogram's points, and each instrument's unit.
type collected struct {
	sums  map[string]map[string]int64
	waits []metricdata.HistogramDataPoint[float64]
	units map[string]string
}

func collect(ctx context.Context, t *testing.T, reader sdkmetric.Reader) collected {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(ctx, &rm))
	got := collected{sums: map[string]map[string]int64{}, units: map[string]string{}}
	for _, sm := range rm.ScopeMetrics {
		require.Equal(t, rlockotel.MeterName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			got.units[m.Name] = m.Unit
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				got.sums[m.Name] = map[string]int64{}
				for _, p := range d.DataPoints {
					got.sums[m.Name][label(p.Attributes)] += p.Value
				}
			case metricdata.Histogram[float64]:
				got.waits = d.DataPoints
			}
		}
	}
	return got
}

// label is a metric point's attributes as "k=v k=v", sorted.
func label(set attribute.Set) string {
	s := ""
	for _, kv := range set.ToSlice() {
		if s != "" {
			s += " "
		}
		s += string(kv.Key) + "=" + kv.Value.AsString()
	}
	return s
}
