package watchdog

import (
	"context"
	"testing"
	"time"
)

// BenchmarkTick10k measures one tick's renewal round over 10,000 due leases
// with a Renew that does nothing, so it shows the scheduler's own cost per
// tick and that a tick takes ceil(10000/BatchSize) calls.
func BenchmarkTick10k(b *testing.B) {
	const leases = 10_000
	renewed := make([]error, DefaultBatchSize)
	s, err := New(Config[int]{
		Lease: time.Hour, // the scheduler's own ticker stays out of the way
		Renew: func(_ context.Context, batch []int) []error { return renewed[:len(batch)] },
	})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for i := range leases {
		if _, err := s.Watch(i, time.Now(), nil); err != nil {
			b.Fatal(err)
		}
	}
	before := s.Stats()
	for b.Loop() {
		// A tick later than now makes every lease due, however recently renewed.
		s.renewRound(s.dueAt(time.Now().Add(s.tick)))
	}
	after := s.Stats()
	ticks := float64(b.N)
	b.ReportMetric(float64(after.RenewCalls-before.RenewCalls)/ticks, "calls/tick")
	b.ReportMetric(float64(after.Renewed-before.Renewed)/ticks, "renewed/tick")
}
