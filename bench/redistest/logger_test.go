package redistest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// recordingTB is a test whose log lines are kept, to be read back.
type recordingTB struct {
	testing.TB

	mu    sync.Mutex
	lines []string
}

func (r *recordingTB) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
}

func (r *recordingTB) logged() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lines...)
}

// logSentinelFailure makes go-redis log a line: a Sentinel client whose
// one sentinel refuses the connection logs that failure.
func logSentinelFailure(t *testing.T) {
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    SentinelMaster,
		SentinelAddrs: []string{fmt.Sprintf("127.0.0.1:%d", freePort(t))},
		MaxRetries:    -1,
		DialerRetries: 1,
	})
	defer func() { _ = rdb.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.Error(t, rdb.Ping(ctx).Err())
}

// go-redis's lines go to the latest live test that started a server, and
// only while it runs: a subtest's, then its parent's again.
func TestGoRedisLogsGoToTheTestsLog(t *testing.T) {
	outer := &recordingTB{TB: t}
	logTo(outer)
	inner := &recordingTB{}
	t.Run("subtest", func(t *testing.T) {
		inner.TB = t
		logTo(inner)
		logSentinelFailure(t)
	})
	require.Empty(t, outer.logged(), "the subtest's lines went to its parent")
	sentinelLines := func(lines []string) bool {
		return slices.ContainsFunc(lines, func(l string) bool {
			return strings.HasPrefix(l, "go-redis: sentinel: GetMasterAddrByName")
		})
	}
	require.True(t, sentinelLines(inner.logged()), "the subtest's log: %q", inner.logged())

	before := len(inner.logged())
	logSentinelFailure(t)
	require.True(t, sentinelLines(outer.logged()), "the parent's log: %q", outer.logged())
	require.Len(t, inner.logged(), before, "a line went to a test that had ended")
}
