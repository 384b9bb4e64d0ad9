package bench

import (
	"testing"

	"go.uber.org/goleak"
)

// Runs start and stop many clients, hubs and watchdogs: none may linger.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
