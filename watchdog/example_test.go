package watchdog_test

import (
	"context"
	"fmt"
	"time"

	"github.com/batonlock/baton/watchdog"
)

// A RenewFunc sends one batch as one round trip. Here the store has
// forgotten "orders:42", so the first renewal reports the loss.
func Example() {
	renew := func(_ context.Context, keys []string) []error {
		errs := make([]error, len(keys))
		for i, key := range keys {
			if key == "orders:42" {
				errs[i] = fmt.Errorf("%s: %w", key, watchdog.ErrNotHeld)
			}
		}
		return errs
	}
	s, err := watchdog.New(watchdog.Config[string]{Lease: 30 * time.Millisecond, Renew: renew})
	if err != nil {
		panic(err)
	}
	defer s.Close()

	lost := make(chan error, 1)
	validFrom := time.Now() // taken before sending the command that took the lock
	if _, err := s.Watch("orders:42", validFrom, func(cause error) { lost <- cause }); err != nil {
		panic(err)
	}
	fmt.Println(<-lost)
	// Output: orders:42: watchdog: lease not held
}
