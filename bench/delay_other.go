//go:build !linux

package bench

import "time"

// sleepPrecisely sleeps for d; outside Linux with time.Sleep, which may
// round a delay below a millisecond up to one.
func sleepPrecisely(d time.Duration) { time.Sleep(d) }
