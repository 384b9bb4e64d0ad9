package redisproc

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// Each server has a goroutine waiting for its process; none may outlive the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseCommands(t *testing.T) {
	info := "# Commandstats\r\n" +
		"cmdstat_evalsha:calls=12,usec=340,usec_per_call=28.33,rejected_calls=0,failed_calls=1\r\n" +
		"cmdstat_client|list:calls=3,usec=9,usec_per_call=3.00\r\n" +
		"\r\n"
	got, err := ParseCommands(info)
	require.NoError(t, err)
	require.Equal(t, CommandStats{"evalsha": 12, "client|list": 3}, got.Calls)
	require.Equal(t, CommandStats{"evalsha": 340, "client|list": 9}, got.Usec)

	_, err = ParseCommands("cmdstat_get:usec=1\r\n")
	require.ErrorContains(t, err, "no calls")
	_, err = ParseCommands("cmdstat_get:calls=1\r\n")
	require.ErrorContains(t, err, "no usec")

	before := Commands{Calls: CommandStats{"evalsha": 10, "get": 4}, Usec: CommandStats{"evalsha": 300}}
	d := got.Sub(before)
	require.Equal(t, CommandStats{"evalsha": 2, "client|list": 3}, d.Calls)
	require.Equal(t, CommandStats{"evalsha": 40, "client|list": 9}, d.Usec)
	require.EqualValues(t, 15, got.Calls.Total())
}

// requireServer skips under -short, which runs only the tests that need
// no server, and fails without redis-server. (redistest, which tells every
// other package's tests so, imports this package.)
func requireServer(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a real redis-server: skipped under -short")
	}
	if _, err := LookPath(); err != nil {
		t.Fatalf("%v: install it with `%s`", err, InstallCommand)
	}
}

// TestStartStopLeavesNothing starts a server in a directory of its own and
// stops it: the process has exited and been reaped, and the directory is gone.
func TestStartStopLeavesNothing(t *testing.T) {
	requireServer(t)
	s, err := Start(Config{})
	require.NoError(t, err)
	pid, dir := s.Pid(), s.dir
	require.Positive(t, pid)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer rdb.Close()
	require.NoError(t, rdb.Set(ctx, "k", "v", 0).Err())
	stats, err := ReadCommands(ctx, rdb)
	require.NoError(t, err)
	require.EqualValues(t, 1, stats.Calls["set"])

	require.NoError(t, s.Restart(), "same port, empty dataset")
	require.Equal(t, redis.Nil, rdb.Get(ctx, "k").Err())

	s.Stop()
	s.Stop() // idempotent
	require.Zero(t, s.Pid())
	require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "the process is gone, not a zombie")
	_, err = os.Stat(dir)
	require.True(t, errors.Is(err, os.ErrNotExist), "the directory Start made is removed")
	require.Error(t, s.Signal(syscall.SIGCONT))
}

func TestStartFailsCleanlyOnABadArgument(t *testing.T) {
	requireServer(t)
	dir := t.TempDir()
	_, err := Start(Config{Dir: dir, Args: []string{"--no-such-option", "1"}})
	require.ErrorContains(t, err, "did not start")
	_, err = os.Stat(dir)
	require.NoError(t, err, "a directory the caller gave is left alone")
}
