package reentrant

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// ErrInvalidLease reports a lease that is not positive.
var ErrInvalidLease = errors.New("reentrant: lease must be positive")

// leaseMillis is lease in whole milliseconds, the resolution of PEXPIRE,
// rounded up: Redis must never expire a lock before the caller's lease ends.
func leaseMillis(lease time.Duration) (int64, error) {
	if lease <= 0 {
		return 0, fmt.Errorf("%w: got %v", ErrInvalidLease, lease)
	}
	return int64((lease + time.Millisecond - 1) / time.Millisecond), nil
}

// formatToken writes a token as the scripts compare it with the counter.
func formatToken(token uint64) string { return strconv.FormatUint(token, 10) }

// wireFlag writes a flag as the scripts read it: '1' for true, '0' for
// false.
func wireFlag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
