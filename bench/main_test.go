package bench

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/batonlock/baton/bench/redistest"
)

// Runs start and stop many clients, hubs and watchdogs: none may linger.
func TestMain(m *testing.M) {
	redistest.RequireInstalled()
	goleak.VerifyTestMain(m)
}
