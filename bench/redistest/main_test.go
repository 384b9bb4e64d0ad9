package redistest

import (
	"testing"

	"go.uber.org/goleak"
)

// Each server has a goroutine waiting for its process; none may outlive the tests.
func TestMain(m *testing.M) {
	RequireInstalled()
	goleak.VerifyTestMain(m)
}
