package redistest

import (
	"context"
	"log"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// go-redis logs through one logger for the whole process (redis.SetLogger).
// In tests its lines are noise on a green run and evidence on a red one: a
// cluster client under the least-privilege ACL user logs a NOPERM for the
// COMMAND it may not run, a Sentinel client logs each master it selects. So
// every server Start routes them to its test's log, which go test prints
// only when that test fails (or under -v).

// testLogs is go-redis's logger once a server has started.
var testLogs = &testLogger{stderr: log.New(os.Stderr, "redis: ", log.LstdFlags)}

// installLogs installs testLogs, once.
var installLogs sync.Once

// testLogger writes each go-redis line to the log of the latest live test
// that started a server: a test that runs subtests holds its place while
// they run, and gets the lines again once they have ended. A line logged
// while no such test is live goes to stderr, as go-redis would print it.
type testLogger struct {
	stderr *log.Logger

	mu  sync.Mutex   // guards tbs, and is held while a line is logged to one
	tbs []testing.TB // the live tests that started a server, in start order
}

// logTo routes go-redis's log lines to tb's log until tb ends.
func logTo(tb testing.TB) {
	installLogs.Do(func() { redis.SetLogger(testLogs) })
	l := testLogs
	l.mu.Lock()
	defer l.mu.Unlock()
	if slices.Contains(l.tbs, tb) {
		return
	}
	l.tbs = append(l.tbs, tb)
	// A cleanup registered before the test's servers and clients runs after
	// them: the lines of their closing still reach tb.
	tb.Cleanup(func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.tbs = slices.DeleteFunc(l.tbs, func(o testing.TB) bool { return o == tb })
	})
}

// Printf logs a go-redis line. The lock is held while tb.Logf runs, so a
// line is never logged to a test that has ended: its cleanup waits.
func (l *testLogger) Printf(_ context.Context, format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.tbs); n > 0 {
		tb := l.tbs[n-1]
		tb.Helper() // the line is reported at go-redis's call, as go-redis's own logger does
		tb.Logf("go-redis: "+format, v...)
		return
	}
	l.stderr.Printf(format, v...)
}
