package watchdog_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The scheduler and its renewal rounds are goroutines; none may outlive Close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
