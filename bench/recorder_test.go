package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestHandoffGapAccounting(t *testing.T) {
	r := newRecorder(2)
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

	_, ok := r.acquired(0, 1, at(0), at(1))
	require.False(t, ok, "first acquisition follows no release")
	r.releasing(0, 1, at(5))

	_, ok = r.acquired(0, 1, at(6), at(7))
	require.False(t, ok, "the same worker re-taking its lock is no hand-off")
	r.releasing(0, 1, at(10))

	gap, ok := r.acquired(0, 2, at(8), at(13))
	require.True(t, ok, "worker 2 waited since before the release")
	require.Equal(t, 3*time.Millisecond, gap, "from release start to acquisition")
	r.releasing(0, 2, at(20))

	_, ok = r.acquired(0, 3, at(50), at(51))
	require.False(t, ok, "a lock that sat free before Lock was called is no hand-off")
	r.releasing(0, 3, at(52))

	_, ok = r.acquired(1, 4, at(0), at(60))
	require.False(t, ok, "names are accounted separately")
	require.Zero(t, r.violations.Load())
}

func TestViolationsCountOverlappingHolders(t *testing.T) {
	r := newRecorder(1)
	now := time.Now()
	r.acquired(0, 1, now, now)
	r.acquired(0, 2, now, now) // worker 1 has not started to release
	require.EqualValues(t, 1, r.violations.Load())
	r.releasing(0, 2, now)
	r.releasing(0, 1, now)
	r.acquired(0, 3, now, now)
	require.EqualValues(t, 1, r.violations.Load(), "a lock released by all is free again")
}
