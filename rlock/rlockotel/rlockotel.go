// Package rlockotel records the events of a baton lock client
// (rlock.Observer) as OpenTelemetry metrics.
//
// It owns the instruments and nothing else: it takes a MeterProvider and
// returns an rlock.Observer to pass to rlock.WithObserver. It is a module of
// its own, so that baton's core module never requires OpenTelemetry.
//
// Instruments, under the meter "github.com/batonlock/baton/rlock/rlockotel":
//
//	baton.lock.wait.duration      histogram, s   waits that found the lock held; attribute outcome
//	baton.lock.acquisitions       counter        locks returned; attribute kind (free, reentered, handed off)
//	baton.lock.releases           counter        confirmed unlocks
//	baton.lock.renewals           counter        leases renewed by the watchdog
//	baton.lock.renewal.failures   counter        renewals answered with a transient error or not sent in time
//	baton.lock.losses             counter        holds lost
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

// Option configures Observer.
type Option func(*config)

type config struct{ lockName bool }

// WithLockName adds the lock's name to every measurement as the attribute
// "lock". Use it only when lock names are few.
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
		metric.WithDescription("How long Lock and TryLock calls waited for a held lock.")); err != nil {
		return rlock.Observer{}, err
	}
	for _, c := range []struct {
		dst         *metric.Int64Counter
		name, about string
	}{
		{&in.acquisitions, "baton.lock.acquisitions", "Locks returned by Lock and TryLock."},
		{&in.releases, "baton.lock.releases", "Unlocks confirmed by Redis."},
		{&in.renewals, "baton.lock.renewals", "Leases renewed by the watchdog."},
		{&in.renewFails, "baton.lock.renewal.failures", "Renewals answered with a transient error, or not sent in time."},
		{&in.losses, "baton.lock.losses", "Holds lost."},
	} {
		if *c.dst, err = m.Int64Counter(c.name, metric.WithDescription(c.about)); err != nil {
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
	in.wait.Record(context.Background(), w.Duration.Seconds(), in.attrs(w.Name, attribute.String("outcome", w.Outcome.String())))
}

func (in *instruments) acquired(a rlock.Acquire) {
	in.acquisitions.Add(context.Background(), 1, in.attrs(a.Name, attribute.String("kind", a.Kind.String())))
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
