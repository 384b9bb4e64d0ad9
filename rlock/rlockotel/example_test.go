package rlockotel_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/batonlock/baton/rlock"
	"github.com/batonlock/baton/rlock/rlockotel"
)

// Wire a client's events to a meter provider: here the SDK's with a manual
// reader, in production the one your exporter is set up with.
func Example() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())
	obs, err := rlockotel.Observer(provider)
	if err != nil {
		panic(err)
	}
	locks, _ := rlock.New(rdb, rlock.WithObserver(obs))
	defer locks.Close()

	_ = locks.Do(context.Background(), "nightly", func(context.Context) error { return nil })

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
			fmt.Println(m.Name, sum.DataPoints[0].Value)
		}
	}
	// Unordered output:
	// baton.lock.acquisitions 1
	// baton.lock.releases 1
}
