package rlock

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// stressCheckScript is the fencing ledger of the LockAll stress test, on a
// redis-server of its own, one atomic script per call. 'take' records that
// process pid holds each name of a set under its token (ARGV: op, pid,
// then name, token pairs); for each name it counts, and logs:
//   - an overlap when another live process's entry holds the name (an entry
//     of a process marked dead is dropped: its hold is judged by its
//     deadline instead), or when the name's dead-holder deadline (the
//     latest lease deadline a SIGKILLed process's hold of it had, read on
//     the lock server once the process was gone) has not passed;
//   - a stale token when the token is not above every token of the name
//     seen before (fencing order).
//
// It counts 'concurrent' when another name is held at the take, which
// shows the check saw holders side by side. 'give' removes this pid's
// entries of the set (a missing one is logged as an overlap: someone took
// the name in between).
var stressCheckScript = redis.NewScript(`
local entries, dead, deadlines, last, stats, log = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local op, pid = ARGV[1], ARGV[2]
local function overlap(what)
  redis.call('hincrby', stats, 'overlaps', 1)
  redis.call('rpush', log, what)
end
if op == 'give' then
  for i = 3, #ARGV, 2 do
    local mine = pid .. ' ' .. ARGV[i + 1]
    if redis.call('hget', entries, ARGV[i]) == mine then
      redis.call('hdel', entries, ARGV[i])
    else
      overlap(ARGV[i] .. ': gone at the give of ' .. mine)
    end
  end
  return 0
end
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 3, #ARGV, 2 do
  local name, token = ARGV[i], tonumber(ARGV[i + 1])
  local entry = redis.call('hget', entries, name)
  if entry and redis.call('sismember', dead, string.match(entry, '^%d+')) == 1 then
    redis.call('hdel', entries, name)
  elseif entry then
    overlap(name .. ': ' .. entry .. ' | taken by ' .. pid .. ' ' .. token)
  end
  local until_ = tonumber(redis.call('hget', deadlines, name) or '0')
  if now < until_ then
    overlap(name .. ': taken by ' .. pid .. ' ' .. token .. ' at ' .. now .. ', a dead holder until ' .. until_)
  end
  if token <= tonumber(redis.call('hget', last, name) or '0') then
    redis.call('hincrby', stats, 'stale', 1)
    redis.call('rpush', log, name .. ': stale token ' .. token)
  end
  redis.call('hset', last, name, ARGV[i + 1])
end
if redis.call('hlen', entries) > 0 then
  redis.call('hincrby', stats, 'concurrent', 1)
end
for i = 3, #ARGV, 2 do
  redis.call('hset', entries, ARGV[i], pid .. ' ' .. ARGV[i + 1])
end
return 0`)

// The checker's keys.
var stressKeys = []string{"entries", "dead", "deadlines", "last", "stats", "log"}

const (
	stressOps     = "ops"     // a list of "pid start end size", times in µs
	stressStalls  = "stalls"  // the children's stalls: "start end", in µs
	stressErrors  = "errors"  // the children's unexpected errors
	stressClients = "clients" // pid → the child's client ID
)

// stressChecker is a connection to the checker server, for process pid.
type stressChecker struct {
	rdb *redis.Client
	pid int
}

// call runs the script's op for this process on names and tokens, bounded.
func (k *stressChecker) call(op string, names []string, tokens []uint64) error {
	args := []any{op, k.pid}
	for i, n := range names {
		args = append(args, n, tokens[i])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return stressCheckScript.Run(ctx, k.rdb, stressKeys, args...).Err()
}

// take records that process pid holds names under tokens.
func (k *stressChecker) take(names []string, tokens []uint64) error {
	return k.call("take", names, tokens)
}

// give records that process pid gives names up.
func (k *stressChecker) give(names []string, tokens []uint64) error {
	return k.call("give", names, tokens)
}

// op records one completed LockAll: its process, its call and return, and
// its set's size.
func (k *stressChecker) op(start, end time.Time, size int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return k.rdb.RPush(ctx, stressOps, fmt.Sprintf("%d %d %d %d", k.pid, start.UnixMicro(), end.UnixMicro(), size)).Err()
}

// stallTick and stallLate define a stall of a child: a sleep of stallTick
// that returned more than stallLate late, the process (or its scheduler)
// not running meanwhile.
const stallTick, stallLate = 5 * time.Millisecond, 20 * time.Millisecond

// watchStalls records this process's stalls until stop ends: the
// machine's load, not the lock, which the test's log reports beside the
// waits.
func (k *stressChecker) watchStalls(stop context.Context) {
	for stop.Err() == nil {
		start := time.Now()
		time.Sleep(stallTick)
		if end := time.Now(); end.Sub(start) > stallTick+stallLate {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = k.rdb.RPush(ctx, stressStalls, fmt.Sprintf("%d %d", start.UnixMicro(), end.UnixMicro())).Err()
			cancel()
		}
	}
}

// failed records an unexpected error of this process.
func (k *stressChecker) failed(err error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return k.rdb.RPush(ctx, stressErrors, fmt.Sprintf("%d: %v", k.pid, err)).Err()
}

// joined records the client ID of process pid, whose owners' fields in a
// lock hash start with it.
func (k *stressChecker) joined(id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return k.rdb.HSet(ctx, stressClients, strconv.Itoa(k.pid), id).Err()
}

// markDead records that process pid is dead, and, per name, the latest
// lease deadline (server ms) its holds had: until then no other process
// may take the name.
func (k *stressChecker) markDead(ctx context.Context, pid int, deadlines map[string]int64) error {
	for name, d := range deadlines {
		old, err := k.rdb.HGet(ctx, stressKeys[2], name).Int64()
		if err != nil && err != redis.Nil {
			return err
		}
		if err := k.rdb.HSet(ctx, stressKeys[2], name, max(old, d)).Err(); err != nil {
			return err
		}
	}
	return k.rdb.SAdd(ctx, stressKeys[1], pid).Err()
}

// figures are the counts: overlaps, stale, concurrent.
func (k *stressChecker) figures(ctx context.Context) map[string]int64 {
	out := map[string]int64{}
	for f, v := range k.rdb.HGetAll(ctx, stressKeys[4]).Val() {
		out[f], _ = strconv.ParseInt(v, 10, 64)
	}
	return out
}

// The ledger counts what the stress test must never see: a take beside
// another live process's entry, a take before a dead holder's deadline,
// and a token not above the name's last; a dead process's entry is judged
// by its deadline alone.
func TestStressLedgerCountsOverlapsAndStaleTokens(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	a, b := &stressChecker{rdb: srv.Admin(), pid: 1}, &stressChecker{rdb: srv.Admin(), pid: 2}
	require.NoError(t, a.take([]string{"x", "y"}, []uint64{1, 2}))
	require.Equal(t, map[string]int64{}, a.figures(ctx), "nothing held beside it")
	require.NoError(t, b.take([]string{"y"}, []uint64{3}))
	require.Equal(t, map[string]int64{"overlaps": 1, "concurrent": 1}, a.figures(ctx), "y held by 1")

	require.NoError(t, b.take([]string{"z"}, []uint64{4}))
	require.NoError(t, b.give([]string{"z"}, []uint64{4}))
	require.NoError(t, b.take([]string{"z"}, []uint64{4}))
	require.Equal(t, int64(1), a.figures(ctx)["stale"], "z's token again")

	require.NoError(t, a.markDead(ctx, 1, map[string]int64{"w": time.Now().Add(time.Minute).UnixMilli()}))
	before := a.figures(ctx)["overlaps"]
	require.NoError(t, b.take([]string{"x"}, []uint64{5}))
	require.Equal(t, before, a.figures(ctx)["overlaps"], "x's entry is a dead process's, without a deadline")
	require.NoError(t, b.take([]string{"w"}, []uint64{6}))
	require.Equal(t, before+1, a.figures(ctx)["overlaps"], "w taken before the dead holder's deadline")
	require.Len(t, srv.Admin().LRange(ctx, stressKeys[5], 0, -1).Val(), 3, "each logged")
}
