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

// MaxToken is the largest fencing token (and hold ID), 2^53-1: the
// scripts keep tokens in Lua numbers, doubles, which are exact only up to
// 2^53. Tokens are server time in µs, so only a counter set far ahead of
// the clock (2^53 µs is in the year 2255) reaches it.
const MaxToken = 1<<53 - 1

// ErrTokenOverflow: a script would have made a token past MaxToken (its
// counter is at the end of the range), so it failed instead, having
// written nothing that names the token: no later hold of that lock can
// be made there until the counter is reset by hand (see the package
// doc's Holds and tokens).
var ErrTokenOverflow = errors.New("reentrant: fencing counter at the end of the exact token range")

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
