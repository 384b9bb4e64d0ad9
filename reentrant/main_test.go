package reentrant

import (
	"testing"

	"go.uber.org/goleak"
)

// The package starts no goroutines; its tests' servers must not leave any.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
