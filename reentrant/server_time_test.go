package reentrant

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// A free path is one Lock+Unlock of a lock nobody else holds or waits
// for: baton's acquire and release, against Redisson's acquire and unlock
// (Java Redisson's own scripts, testdata/redisson, as Java runs them; wire
// mode's differ: they never shorten a lease and check the server's role).

// javaAcquire and javaUnlock are Java Redisson's own acquire and unlock.
var (
	javaAcquire = newScript(luaFile{name: "redisson/acquire.lua", text: javaAcquireLua})
	javaUnlock  = newScript(luaFile{name: "redisson/unlock.lua", text: javaUnlockLua})
)

// freePathKeys is how many lock names the free paths cycle through, as 32
// workers on separate keys would.
const freePathKeys = 32

// freePath is one format's free Lock+Unlock: its two scripts, and the
// call of pair i.
type freePath struct {
	name             string
	acquire, release *script
	pair             func(t testing.TB, rdb *redis.Client, i int)
}

func freePaths() []freePath {
	ctx := context.Background()
	return []freePath{
		{"baton", acquireScript, releaseScript, func(t testing.TB, rdb *redis.Client, i int) {
			k, err := Namespace{}.Keys(fmt.Sprint("free-", i%freePathKeys))
			require.NoError(t, err)
			owner := fmt.Sprint("owner-", i)
			a, err := k.AcquireNew(ctx, rdb, owner, testLease, Waiter{})
			require.NoError(t, err)
			require.True(t, a.Acquired)
			r, err := k.Release(ctx, rdb, owner, a.Token, fmt.Sprint("req-", i))
			require.NoError(t, err)
			require.Equal(t, Released, r.Status)
		}},
		{"redisson", javaAcquire, javaUnlock, func(t testing.TB, rdb *redis.Client, i int) {
			k, err := RedissonNamespace{}.Keys(fmt.Sprint("free-", i%freePathKeys))
			require.NoError(t, err)
			f, err := NewRedissonField("c0ffee", fmt.Sprint(i))
			require.NoError(t, err)
			ms := testLease.Milliseconds()
			a, err := javaAcquire.Run(ctx, rdb, []string{k.Hash}, ms, f.String()).Result()
			require.ErrorIs(t, err, redis.Nil, "acquired: %v", a)
			st, err := javaUnlock.Run(ctx, rdb, []string{k.Hash, k.Channel, k.LatchKey(fmt.Sprint("req-", i))},
				0, ms, f.String(), "publish", ms).Int64()
			require.NoError(t, err)
			require.EqualValues(t, 1, st, "released")
		}},
	}
}

// scriptTimes is the server time of each run of each script, by its SHA,
// as SLOWLOG (at a threshold of 0) logs it: the script's own time, from
// its start to its reply, in the server's one thread.
type scriptTimes map[string][]time.Duration

// mean is the mean server time of the runs of s, in µs, without the
// slowest tenth: SLOWLOG logs whole µs, and a mean of many runs resolves
// less than one; on a loaded machine the slowest runs were preempted.
func (st scriptTimes) mean(s *script) float64 {
	d := slices.Clone(st[s.Hash()])
	slices.Sort(d)
	d = d[:len(d)-len(d)/10]
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return float64(sum.Nanoseconds()) / 1e3 / float64(max(len(d), 1))
}

// measureFreePaths runs rounds rounds of batch pairs of every free path,
// the paths' order rotated each round so that the machine's load falls on
// each alike, and returns the server times of their scripts.
func measureFreePaths(t testing.TB, rounds, batch int) scriptTimes {
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Admin()
	require.NoError(t, rdb.ConfigSet(ctx, "slowlog-log-slower-than", "0").Err())
	require.NoError(t, rdb.ConfigSet(ctx, "slowlog-max-len", fmt.Sprint(4*batch)).Err())
	paths := freePaths()
	times := scriptTimes{}
	i := 0
	for round := range rounds {
		for j := range paths {
			p := paths[(round+j)%len(paths)]
			require.NoError(t, rdb.SlowLogReset(ctx).Err())
			for range batch {
				p.pair(t, rdb, i)
				i++
			}
			log, err := rdb.SlowLogGet(ctx, -1).Result()
			require.NoError(t, err)
			for _, l := range log {
				if len(l.Args) > 1 && strings.EqualFold(l.Args[0], "evalsha") {
					times[l.Args[1]] = append(times[l.Args[1]], l.Duration)
				}
			}
		}
	}
	return times
}

// BenchmarkFreePathServerTime reports the mean server time of each
// script of the free path, baton's and Redisson's, measured in one run,
// and their ratio: what a free Lock+Unlock costs the server's one thread.
func BenchmarkFreePathServerTime(b *testing.B) {
	for range b.N {
		st := measureFreePaths(b, 6, 200)
		total := map[string]float64{}
		for _, p := range freePaths() {
			acq, rel := st.mean(p.acquire), st.mean(p.release)
			b.ReportMetric(acq, p.name+"-acquire-µs")
			b.ReportMetric(rel, p.name+"-release-µs")
			total[p.name] = acq + rel
		}
		b.ReportMetric(total["baton"]/total["redisson"], "baton/redisson")
	}
}

// TestFreePathCommands pins what a free Lock+Unlock asks of the server:
// the commands its two scripts run. The free path is the common one, and
// each command a script runs costs the server's one thread; acquire.lua
// and release.lua end it before the grant library (see freePathScript).
// A new command on it must be a decision, made here.
func TestFreePathCommands(t *testing.T) {
	ctx, rdb, k := setup(t, "free")
	// Once before counting, so that the server has the scripts cached.
	a, err := k.AcquireNew(ctx, rdb, "warm", testLease, Waiter{})
	require.NoError(t, err)
	_, err = k.Release(ctx, rdb, "warm", a.Token, "warm")
	require.NoError(t, err)

	require.NoError(t, rdb.ConfigResetStat(ctx).Err())
	a, err = k.AcquireNew(ctx, rdb, "o", testLease, Waiter{})
	require.NoError(t, err)
	require.True(t, a.Acquired)
	r, err := k.Release(ctx, rdb, "o", a.Token, "req")
	require.NoError(t, err)
	require.Equal(t, Released, r.Status)

	st, err := redistest.ReadCommandStats(ctx, rdb)
	require.NoError(t, err)
	delete(st, "config|resetstat")
	require.Equal(t, map[string]int64{
		"evalsha": 2,
		// acquire: is this server the master (master.lua: a writable
		// replica would take a second hold beside the master's)?
		"info": 1,
		// acquire: is the lock free with nobody queued? Then the token
		// (the clock, the counter read and written) and the hold.
		"exists": 2, "time": 1, "set": 2, "hset": 1, "pexpire": 1,
		// release: the replay record and the counter, the hold, is
		// anyone queued? Then the lock goes, and the reply is remembered.
		"mget": 1, "hget": 1, "del": 1,
	}, map[string]int64(st))
}
