package bench

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/batonlock/baton/bench/redistest"
)

// Runs start and stop many clients, hubs and watchdogs: none may linger.
func TestMain(m *testing.M) {
	ServeHolder() // the leak measure re-executes the test binary as its holder
	redistest.RequireInstalled()
	goleak.VerifyTestMain(m)
}
