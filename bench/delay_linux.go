package bench

import (
	"syscall"
	"time"
)

// sleepPrecisely sleeps for d in a nanosleep system call, which wakes
// within the kernel's timer slack (50 µs by default). time.Sleep does
// not do for a delay proxy: below a millisecond, Go's scheduler may wait
// in epoll, whose timeout is in whole milliseconds, so a 500 µs sleep
// takes about 1 ms on an otherwise idle process. The call blocks its
// thread; Go gives the thread's processor to other goroutines meanwhile.
func sleepPrecisely(d time.Duration) {
	if d <= 0 {
		return
	}

	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR { // Go's preemption signals interrupt it
	}
}
