package rlock

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// The multi-process checker of the shared resources (the
// RW lock; the semaphore plugs in as one more familyMember): several child
// processes run random operations on one resource while the parent
// SIGKILLs one now and then and starts a fresh one; a checker on the same
// redis-server, outside the lock, sees every hold taken and given up.

// soakEnv, set to anything, runs the checker at full scale (10^5
// operations); unset, they run at CI's scale.
const soakEnv = "BATON_SOAK"

const (
	familyProcs = 4 // child processes at any time
	// familyWatchdogLease and familyFixedLease are the children's leases
	// (a hold takes one or the other at random): far above the
	// children's hold times, so a live holder keeps its hold.
	familyWatchdogLease = 1500 * time.Millisecond
	familyFixedLease    = 2 * time.Second
)

// familyScale is how many operations the children complete in all before
// the run ends, and how long the run may take for them.
func familyScale() (ops int64, bound time.Duration) {
	if os.Getenv(soakEnv) != "" {
		return 100_000, 40 * time.Minute
	}
	return 6000, 3 * time.Minute
}

// familyCheckScript is the checker, one atomic script. 'take' records a
// hold (field "<mode>:<owner>", the member of its lease in the resource's
// zset) of weight by process pid, after dropping the entries of dead
// processes whose hold the lock itself has ended (no lease, or one whose
// deadline has passed by the server clock); an entry of a live process is
// dropped only by its own 'give'. Then it checks that the holders' load is
// within size: an owner's load is the largest weight among its entries,
// since one owner may hold a write and the read it downgrades to. A load
// above size is an overlap: counted, and the entries logged. 'shared'
// counts takes beside another owner's entry, which shows that the check
// saw concurrent holders at all.
var familyCheckScript = redis.NewScript(`
local entries, dead, leases, stats, log = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local op, field, pid, weight, size = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
if op == 'give' then
  return redis.call('hdel', entries, field)
end
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local all = redis.call('hgetall', entries)
local load = {[string.sub(field, 3)] = weight}
local owners, seen = 1, {field .. ' ' .. pid}
for i = 1, #all, 2 do
  local f, p, w = all[i], string.match(all[i + 1], '^(%d+) (%d+)$')
  local deadline = redis.call('zscore', leases, f)
  if redis.call('sismember', dead, p) == 1 and (not deadline or tonumber(deadline) <= now) then
    redis.call('hdel', entries, f)
  elseif f ~= field then
    local o = string.sub(f, 3)
    if not load[o] then
      owners = owners + 1
    end
    load[o] = math.max(load[o] or 0, tonumber(w))
    seen[#seen + 1] = f .. ' ' .. p
  end
end
local sum = 0
for _, w in pairs(load) do
  sum = sum + w
end
if owners > 1 then
  redis.call('hincrby', stats, 'shared', 1)
end
if sum > size then
  redis.call('hincrby', stats, 'overlaps', 1)
  redis.call('rpush', log, table.concat(seen, ' | '))
end
redis.call('hset', entries, field, pid .. ' ' .. weight)
return sum`)

// familyChecker is the checker's keys for one resource, and its calls.
type familyChecker struct {
	rdb    redis.Cmdable
	keys   []string // entries, dead, leases, stats, log (see familyCheckScript)
	errs   string   // the children's unexpected errors, one a line
	losses string   // why holds were lost, one a line
	size   int64
}

// newFamilyChecker is the checker of member m's resource called name. Its
// keys are not the resource's (they carry no {name} hash tag).
func newFamilyChecker(rdb redis.Cmdable, m familyMember, name string) *familyChecker {
	pre := "familycheck:" + name + ":"
	return &familyChecker{rdb: rdb, size: m.size, errs: pre + "errors", losses: pre + "losses", keys: []string{pre + "entries",
		pre + "dead", m.hashKey(name) + ":leases", pre + "stats", pre + "log"}}
}

// take records the hold of field and weight, taken by this process.
func (k *familyChecker) take(ctx context.Context, field string, weight int64) error {
	return familyCheckScript.Run(ctx, k.rdb, k.keys, "take", field, os.Getpid(), weight, k.size).Err()
}

// give records that this process gives up the hold of field.
func (k *familyChecker) give(ctx context.Context, field string) error {
	return familyCheckScript.Run(ctx, k.rdb, k.keys, "give", field, 0, 0, k.size).Err()
}

// markDead records that process pid is about to be killed.
func (k *familyChecker) markDead(ctx context.Context, pid int) error {
	return k.rdb.SAdd(ctx, k.keys[1], pid).Err()
}

// count adds one to the figure called what.
func (k *familyChecker) count(ctx context.Context, what string) error {
	return k.rdb.HIncrBy(ctx, k.keys[3], what, 1).Err()
}

// failed records an unexpected error of a child.
func (k *familyChecker) failed(ctx context.Context, err error) error {
	return k.rdb.RPush(ctx, k.errs, err.Error()).Err()
}

// lost counts a hold found lost, and records why.
func (k *familyChecker) lost(ctx context.Context, cause error) error {
	_, err := k.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.RPush(ctx, k.losses, cause.Error())
		p.HIncrBy(ctx, k.keys[3], "lost", 1)
		return nil
	})
	return err
}

// figures are the counts so far: ops, overlaps, shared, lost, and the
// members' own.
func (k *familyChecker) figures(ctx context.Context) map[string]int64 {
	out := map[string]int64{}
	for f, v := range k.rdb.HGetAll(ctx, k.keys[3]).Val() {
		out[f], _ = strconv.ParseInt(v, 10, 64)
	}
	return out
}

// runFamily runs member m under the checker: familyProcs children at a
// time, one of them SIGKILLed every 0.5-2 s and replaced, until the
// children have completed familyScale's operations. Then it stops the
// survivors, waits out the dead ones' leases, and asserts: no overlap, no
// unexpected error, concurrent holders seen, an empty queue, and nothing
// of the resource left but its persistent keys.
func runFamily(t *testing.T, m familyMember) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
	defer cancel()
	srv := redistest.Start(t)
	rdb := admin(t, srv)
	name := "checker-" + m.kind
	k := newFamilyChecker(rdb, m, name)
	target, bound := familyScale()
	start := func() *child {
		return startChild(t, bound+time.Minute, helperEnv+"=checker", helperAddr+"="+srv.Addr,
			helperLock+"="+name, helperKind+"="+m.kind, helperLease+"="+familyWatchdogLease.String())
	}
	took, kills := runKilling(ctx, t, k, start, bound, func() bool { return k.figures(ctx)["ops"] >= target })
	time.Sleep(familyFixedLease) // the dead children's holds have ended by now
	lookCtx, cancelLook := context.WithTimeout(ctx, fast)
	defer cancelLook()
	require.NoError(t, m.look(lookCtx, newClient(t, srv), name), "a look past the dead children's queue entries")
	f := k.figures(ctx)
	t.Logf("%s: %d ops by %d processes (%d SIGKILLed) in %v: %d overlaps, %d lost holds, %v",
		m.kind, f["ops"], familyProcs+kills, kills, took.Round(time.Second), f["overlaps"], f["lost"], f)
	require.Zero(t, f["overlaps"], "overlapping holders: %v", rdb.LRange(ctx, k.keys[4], 0, 20).Val())
	require.Empty(t, rdb.LRange(ctx, k.errs, 0, 20).Val(), "the children's unexpected errors")
	require.Positive(t, f["shared"], "no hold was ever taken beside another")
	require.Zero(t, rdb.LLen(ctx, m.hashKey(name)+":queue").Val(), "queue entries left")
	requireOnlyFence(t, rdb, name)
}

// runKilling keeps familyProcs children from start running, and SIGKILLs
// one at random every 0.5-2 s (recording it with k first) and starts a
// fresh one, until done reports true; then it stops the survivors, which
// must end cleanly. A child that ends by itself fails the test, as does a
// run longer than bound. It returns how long the children ran and how
// many it killed.
func runKilling(ctx context.Context, t *testing.T, k *familyChecker, start func() *child, bound time.Duration, done func() bool) (took time.Duration, kills int) {
	kids := make([]*child, familyProcs)
	for i := range kids {
		kids[i] = start()
	}
	began := time.Now()
	for !done() {
		require.Less(t, time.Since(began), bound, "the children did too little: %v", k.figures(ctx))
		time.Sleep(500*time.Millisecond + rand.N(1500*time.Millisecond))
		for _, ch := range kids {
			select {
			case <-ch.read:
				t.Fatalf("a child ended by itself:\n%s", ch.stderr.String())
			default:
			}
		}
		i := rand.IntN(len(kids))
		require.NoError(t, k.markDead(ctx, kids[i].cmd.Process.Pid))
		kids[i].kill()
		kills++
		kids[i] = start()
	}
	for _, ch := range kids {
		ch.finish()
	}
	return time.Since(began), kills
}

// Issue 24 property 1: over random reads, writes, re-entries, downgrades,
// cancelled waits and bounded tries from 4 processes, some SIGKILLed, a
// checker never sees a writer together with any other owner's hold.
func TestRWExclusionAcrossKilledProcesses(t *testing.T) {
	runFamily(t, rwMember)
}
