// Package rlockotel records the events of a baton lock client
// (rlock.Observer) as OpenTelemetry metrics.
//
// It owns the instruments and nothing else: it takes a MeterProvider and
// returns an rlock.Observer to pass to rlock.WithObserver. It is a module of
// its own, so that baton's core module never requires OpenTelemetry.
//
// Instruments, under the meter "github.com/batonlock/baton/rlock/rlockotel":
//
//	baton.lock.wait.duration     histogram  s              waits that found the lock held; attribute outcome
//	baton.lock.acquisitions      counter    {acquisition}  locks returned; attribute kind
//	baton.lock.releases          counter    {release}      confirmed unlocks
//	baton.lock.renewals          counter    {renewal}      leases renewed by the watchdog
//	baton.lock.renewal.failures  counter    {renewal}      renewals answered with a transient error or not sent in time
//	baton.lock.losses            counter    {loss}         holds lost
//
// Attribute values are snake_case and belong to this package, not to the
// String methods of rlock: outcome is acquired, timed_out, cancelled or
// failed; kind is free, reentered or handed_off. The wait histogram's
// buckets are advised in seconds, from 1ms to 60s; a View can replace them.
//
// The lock name is not an attribute unless WithLockName is given: names are
// often unbounded (one per order, per job), and each would make a series.
package rlockotel

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/batonlock/baton/rlock"
)

// MeterName is the name of the meter the instruments are made on.
const MeterName = "github.com/batonlock/baton/rlock/rlockotel"

// waitBuckets are the bucket boundaries, in seconds, advised for
// baton.lock.wait.duration. The SDK's default boundaries (0, 5, 10, ...
// 1000) suit milliseconds and would put nearly every wait in one bucket.
var waitBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// Option configures Observer.
type Option func(*config)

type config struct{ lockName bool }

// WithLockName adds the lock's name as the attribute "lock" to every
// measurement about one lock: all but the renewal counters, whose rounds
// cover many locks at once. Use it only when lock names are few.
func WithLockName() Option { return func(c *config) { c.lockName = true } }

// instruments are the metrics an Observer records into.
type instruments struct {
	cfg                  config
	wait                 metric.Float64Histogram
	acquisitions         metric.Int64Counter
	releases             metric.Int64Counter
	renewals, renewFails metric.Int64Counter
	losses               metric.Int64Counter
}

// Observer returns an rlock.Observer that records a client's events into
// instruments made from mp. Its functions do not block.
func Observer(mp metric.MeterProvider, opts ...Option) (rlock.Observer, error) {
	in := &instruments{}
	for _, o := range opts {
		o(&in.cfg)
	}
	m := mp.Meter(MeterName)
	var err error
	if in.wait, err = m.Float64Histogram("baton.lock.wait.duration", metric.WithUnit("s"),
		metric.WithDescription("How long Lock and TryLock calls waited for a held lock."),
		metric.WithExplicitBucketBoundaries(waitBuckets...)); err != nil {
		return rlock.Observer{}, err
	}
	for _, c := range []struct {
		dst               *metric.Int64Counter
		name, unit, about string
	}{
		{&in.acquisitions, "baton.lock.acquisitions", "{acquisition}", "Locks returned by Lock and TryLock."},
		{&in.releases, "baton.lock.releases", "{release}", "Unlocks confirmed by Redis."},
		{&in.renewals, "baton.lock.renewals", "{renewal}", "Leases renewed by the watchdog."},
		{&in.renewFails, "baton.lock.renewal.failures", "{renewal}", "Renewals answered with a transient error, or not sent in time."},
		{&in.losses, "baton.lock.losses", "{loss}", "Holds lost."},
	} {
		if *c.dst, err = m.Int64Counter(c.name, metric.WithUnit(c.unit), metric.WithDescription(c.about)); err != nil {
			return rlock.Observer{}, err
		}
	}
	return rlock.Observer{
		WaitEnded: in.waitEnded,
		Acquired:  in.acquired,
		Released:  in.released,
		Renewed:   in.renewed,
		Lost:      in.lost,
	}, nil
}

// attrs are the attributes of a measurement about lock name.
func (in *instruments) attrs(name string, kv ...attribute.KeyValue) metric.MeasurementOption {
	if in.cfg.lockName {
		kv = append(kv, attribute.String("lock", name))
	}
	return metric.WithAttributes(kv...)
}

func (in *instruments) waitEnded(w rlock.WaitEnd) {
	in.wait.Record(context.Background(), w.Duration.Seconds(), in.attrs(w.Name, attribute.String("outcome", outcome(w.Outcome))))
}

func (in *instruments) acquired(a rlock.Acquire) {
	in.acquisitions.Add(context.Background(), 1, in.attrs(a.Name, attribute.String("kind", kind(a.Kind))))
}

func (in *instruments) released(r rlock.ReleaseInfo) {
	in.releases.Add(context.Background(), 1, in.attrs(r.Name))
}

func (in *instruments) renewed(r rlock.RenewalRound) {
	ctx := context.Background()
	in.renewals.Add(ctx, int64(r.Leases-r.Failed-r.Lost))
	if r.Failed > 0 {
		in.renewFails.Add(ctx, int64(r.Failed))
	}
}

func (in *instruments) lost(l rlock.Loss) {
	in.losses.Add(context.Background(), 1, in.attrs(l.Name))
}

// outcome is the value of the attribute outcome.
func outcome(o rlock.WaitOutcome) string {
	switch o {
	case rlock.WaitAcquired:
		return "acquired"
	case rlock.WaitTimedOut:
		return "timed_out"
	case rlock.WaitCancelled:
		return "cancelled"
	}
	return "failed"
}

// kind is the value of the attribute kind.
func kind(k rlock.AcquireKind) string {
	switch k {
	case rlock.Free:
		return "free"
	case rlock.Reentered:
		return "reentered"
	}
	return "handed_off"
}
