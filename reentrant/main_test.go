package reentrant

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/batonlock/baton/bench/redistest"
)

// The package starts no goroutines; its tests' servers must not leave any.
func TestMain(m *testing.M) {
	redistest.RequireInstalled()
	goleak.VerifyTestMain(m)
}
