package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestHandoffGapAccounting(t *testing.T) {
	r := newRecorder(2, 1)
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

	_, ok := r.acquired(0, 1, 1, at(0), at(1))
	require.False(t, ok, "first acquisition follows no release")
	r.releasing(0, 1, 1, at(5))

	_, ok = r.acquired(0, 1, 1, at(6), at(7))
	require.False(t, ok, "the same worker re-taking its lock is no hand-off")
	r.releasing(0, 1, 1, at(10))

	gap, ok := r.acquired(0, 2, 1, at(8), at(13))
	require.True(t, ok, "worker 2 waited since before the release")
	require.Equal(t, 3*time.Millisecond, gap, "from release start to acquisition")
	r.releasing(0, 2, 1, at(20))

	_, ok = r.acquired(0, 3, 1, at(50), at(51))
	require.False(t, ok, "a lock that sat free before Lock was called is no hand-off")
	r.releasing(0, 3, 1, at(52))

	_, ok = r.acquired(1, 4, 1, at(0), at(60))
	require.False(t, ok, "names are accounted separately")
	require.Zero(t, r.violations.Load())
}

func TestViolationsCountOverlappingHolders(t *testing.T) {
	r := newRecorder(1, 1)
	now := time.Now()
	r.acquired(0, 1, 1, now, now)
	r.acquired(0, 2, 1, now, now) // worker 1 has not started to release
	require.EqualValues(t, 1, r.violations.Load())
	r.releasing(0, 2, 1, now)
	r.releasing(0, 1, 1, now)
	r.acquired(0, 3, 1, now, now)
	require.EqualValues(t, 1, r.violations.Load(), "a lock released by all is free again")
}

// Weighted holders: an RW lock of 4 workers (a read weighs 1, a write 4)
// and a semaphore of 4 permits count a violation only above the capacity.
func TestViolationsCountWeightAboveTheCapacity(t *testing.T) {
	r := newRecorder(1, 4)
	now := time.Now()
	for w := range 4 {
		r.acquired(0, w, 1, now, now)
	}
	require.Zero(t, r.violations.Load(), "four reads share")
	r.acquired(0, 9, 4, now, now)
	require.EqualValues(t, 1, r.violations.Load(), "a write among reads")
	r.releasing(0, 9, 4, now)
	for w := range 3 {
		r.releasing(0, w, 1, now)
	}
	r.acquired(0, 5, 2, now, now)
	require.EqualValues(t, 1, r.violations.Load(), "1 + 2 of 4 permits")
	r.acquired(0, 6, 2, now, now)
	require.EqualValues(t, 2, r.violations.Load(), "1 + 2 + 2 of 4 permits")
}
