package reentrant

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// Redisson 4.7.0's own scripts (see testdata/redisson/README).
var (
	//go:embed testdata/redisson/acquire.lua
	javaAcquireLua string
	//go:embed testdata/redisson/unlock.lua
	javaUnlockLua string
	//go:embed testdata/redisson/renew.lua
	javaRenewLua string
	//go:embed testdata/redisson/force_unlock.lua
	javaForceUnlockLua string
)

// wireName is a lock name with the channel and latch names Java derives
// from it, written out literally.
type wireName struct {
	name, channel, latchPrefix string
	crossSlot                  bool // its channel is in another slot than its hash
}

var wireNames = []wireName{
	{name: "orders", channel: "redisson_lock__channel:{orders}", latchPrefix: "redisson_unlock_latch:{orders}:"},
	{name: "{acct}lock", channel: "redisson_lock__channel:{acct}lock", latchPrefix: "redisson_unlock_latch:{acct}lock:"},
	{name: "lock{acct}", channel: "redisson_lock__channel:lock{acct}", latchPrefix: "redisson_unlock_latch:lock{acct}:"},
	{name: "lock{", channel: "redisson_lock__channel:lock{", latchPrefix: "redisson_unlock_latch:lock{:", crossSlot: true},
	{name: "a}b", channel: "redisson_lock__channel:{a}b}", latchPrefix: "redisson_unlock_latch:{a}b}:", crossSlot: true},
}

// Fields as Redisson writes them: the instance's UUID and a thread ID.
const (
	wireA = "2d1f5c6e-8a4b-4f0e-9c3d-1b2a3c4d5e6f:1"
	wireB = "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b:57"
)

// latchMs is the latch TTL both sides get: Java computes it from its
// retry settings (at random by default), so the test fixes one.
const latchMs = 17000

// wireOp is one operation of a sequence, as the Java API would issue it.
type wireOp struct {
	kind    string // acquire, fresh, reenter, unlock (the script alone), unlockDel (script, then DropLatch), renew, force
	field   string
	leaseMs int64
	req     string   // the request ID of an unlock, or of an acquire under a latch
	renew   []string // renew: "lock field" pairs, as keys and fields
}

// wireSequence covers every branch of the four scripts; leases differ from
// step to step so that a wrong PEXPIRE shows far beyond the tolerance.
// Each lease set is longer than the lock's remaining one: baton's scripts
// never shorten a lease, where Redisson's do, the one deliberate
// difference (TestRedissonLeaseNeverShortens).
var wireSequence = []wireOp{
	{kind: "acquire", field: wireA, leaseMs: 30000},
	{kind: "acquire", field: wireA, leaseMs: 40000, req: "a1"}, // re-entry, under a latch
	{kind: "reenter", field: wireA, leaseMs: 50000, req: "a2"}, // Reenter: Java's acquire by a holder
	{kind: "acquire", field: wireB, leaseMs: 30000, req: "a3"}, // held: PTTL
	{kind: "renew", leaseMs: 60000, renew: []string{"", wireA, "", wireB, "other", wireA}},
	{kind: "unlock", field: wireB, leaseMs: 25000, req: "r0"},    // not held: no latch
	{kind: "unlock", field: wireA, leaseMs: 70000, req: "r1"},    // partial: latch 0
	{kind: "unlock", field: wireA, leaseMs: 20000, req: "r1"},    // resent: replayed
	{kind: "unlockDel", field: wireA, leaseMs: 20000, req: "r1"}, // resent, then the latch deleted
	{kind: "unlock", field: wireA, leaseMs: 80000, req: "r2"},    // partial again: one hold left
	{kind: "unlock", field: wireA, leaseMs: 25000, req: "r2"},    // resent: replayed
	{kind: "unlockDel", field: wireA, leaseMs: 25000, req: "r2"},
	{kind: "renew", leaseMs: 90000, renew: []string{"", wireA}}, // renewed
	{kind: "acquire", field: wireB, leaseMs: 45000},             // held by A: PTTL
	{kind: "acquire", field: wireA, leaseMs: 100000},            // re-entry
	{kind: "force"},
	{kind: "force"}, // nothing to delete, nothing published
	{kind: "fresh", field: wireA, leaseMs: 30000},
	{kind: "unlockDel", field: wireA, leaseMs: 30000, req: "r3"}, // final: published, latch 1, then deleted
}

// wireRun is what one run of the sequence left after each step.
type wireRun struct {
	replies  []any            // in Java's form: nil, an int64 or a []int64
	states   []map[string]any // every key after each step
	messages [][]string       // "<command> <channel> <payload>" published by each step
	stats    redistest.CommandStats
}

func TestRedissonConformance(t *testing.T) {
	srv := redistest.Start(t)
	admin, rdb := srv.Admin(), srv.Client()
	for _, sharded := range []bool{false, true} {
		for _, wn := range wireNames {
			if sharded && wn.crossSlot {
				continue // refused by Keys; see TestRedissonKeysRefuseCrossSlot
			}
			t.Run(fmt.Sprintf("%s/sharded=%v", wn.name, sharded), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				k, err := RedissonNamespace{Sharded: sharded, LatchTTL: latchMs * time.Millisecond}.Keys(wn.name)
				require.NoError(t, err)
				require.Equal(t, wn.channel, k.Channel)
				require.Equal(t, wn.latchPrefix+"r1", k.LatchKey("r1"))

				ours := runWire(ctx, t, admin, wn, sharded, func(op wireOp) (any, error) { return oursOp(ctx, rdb, k, op) })
				java := runWire(ctx, t, admin, wn, sharded, func(op wireOp) (any, error) { return javaOp(ctx, rdb, wn, sharded, op) })
				compareRuns(t, ours, java)
			})
		}
	}
}

// runWire runs the sequence on an empty server, through do, and records
// what each step left.
func runWire(ctx context.Context, t *testing.T, admin *redis.Client, wn wireName, sharded bool, do func(wireOp) (any, error)) wireRun {
	t.Helper()
	require.NoError(t, admin.FlushAll(ctx).Err())
	require.NoError(t, admin.ConfigResetStat(ctx).Err())
	msgs := captureMessages(ctx, t, admin, wn.channel)
	var run wireRun
	for i, op := range wireSequence {
		reply, err := do(op)
		require.NoError(t, err, "step %d %+v", i, op)
		run.replies = append(run.replies, reply)
		run.states = append(run.states, snapshotKeys(ctx, t, admin))
		run.messages = append(run.messages, msgs())
	}
	st, err := redistest.ReadCommandStats(ctx, admin)
	require.NoError(t, err)
	run.stats = st
	return run
}

// compareRuns requires the same replies, keys, values, dumps and messages
// of both runs, and TTLs within pttlTolerance.
func compareRuns(t *testing.T, ours, java wireRun) {
	t.Helper()
	for i, op := range wireSequence {
		where := fmt.Sprintf("step %d %+v", i, op)
		requireWireEqual(t, java.replies[i], ours.replies[i], where+": reply")
		require.Equal(t, java.messages[i], ours.messages[i], where+": messages")
		require.Len(t, ours.states[i], len(java.states[i]), where+": keys %v / %v", ours.states[i], java.states[i])
		for key, want := range java.states[i] {
			got, ok := ours.states[i][key]
			require.True(t, ok, "%s: key %q missing", where, key)
			requireWireEqual(t, want, got, fmt.Sprintf("%s: key %q", where, key))
		}
	}
	for _, cmd := range []string{"publish", "spublish"} {
		require.Equal(t, java.stats[cmd], ours.stats[cmd], "%s calls", cmd)
	}
}

// pttlTolerance bounds how far a TTL may move between the two runs' reads.
const pttlTolerance = 250

// pttl marks a number read as a TTL, compared within pttlTolerance.
type pttl int64

func requireWireEqual(t *testing.T, want, got any, where string) {
	t.Helper()
	w, wok := want.(pttl)
	g, gok := got.(pttl)
	if !wok || !gok {
		require.Equal(t, want, got, where)
		return
	}
	require.Equal(t, w < 0, g < 0, "%s: TTL %d, Java's %d", where, g, w)
	require.InDelta(t, int64(w), int64(g), pttlTolerance, "%s: TTL", where)
}

func oursOp(ctx context.Context, rdb *redis.Client, k RedissonKeys, op wireOp) (any, error) {
	lease := time.Duration(op.leaseMs) * time.Millisecond
	switch op.kind {
	case "acquire", "fresh", "reenter":
		acquire := map[string]func(context.Context, redis.Scripter, RedissonField, string, time.Duration) (RedissonAcquireResult, error){
			"acquire": k.Acquire, "reenter": k.Reenter,
			"fresh": func(ctx context.Context, rdb redis.Scripter, f RedissonField, _ string, lease time.Duration) (RedissonAcquireResult, error) {
				return k.AcquireFresh(ctx, rdb, f, lease)
			}}[op.kind]
		r, err := acquire(ctx, rdb, mustField(op.field), op.req, lease)
		if err == nil && op.req != "" { // under a latch, then dropped: the state Java's leaves
			err = k.DropLatch(ctx, rdb, op.req)
		}
		if err != nil || r.Acquired {
			return nil, err
		}
		return pttl(r.HolderTTL.Milliseconds()), nil
	case "unlock", "unlockDel":
		st, err := k.Unlock(ctx, rdb, mustField(op.field), op.req, lease)
		if err == nil && op.kind == "unlockDel" {
			err = k.DropLatch(ctx, rdb, op.req)
		}
		if st == NotHeld {
			return nil, err
		}
		return oneIf(st == Released), err
	case "renew":
		var holds []RedissonHold
		for i := 0; i < len(op.renew); i += 2 {
			hk := k
			if op.renew[i] != "" {
				hk = mustKeys(op.renew[i])
			}
			holds = append(holds, RedissonHold{Keys: hk, Field: mustField(op.renew[i+1])})
		}
		renewed, err := RedissonRenewBatch(ctx, rdb, holds, lease)
		reply := make([]int64, len(renewed))
		for i, ok := range renewed {
			reply[i] = oneIf(ok)
		}
		return reply, err
	case "force":
		ok, err := k.ForceUnlock(ctx, rdb)
		return oneIf(ok), err
	}
	return nil, fmt.Errorf("unknown op %q", op.kind)
}

// javaOp runs op with Redisson's script, passing KEYS and ARGV as the Java
// method does, and the follow-up DEL of the latch as
// RedissonBaseLock.unlockInnerAsync sends it.
func javaOp(ctx context.Context, rdb *redis.Client, wn wireName, sharded bool, op wireOp) (any, error) {
	publish := "PUBLISH" // PublishSubscribeService.getPublishCommand
	if sharded {
		publish = "SPUBLISH"
	}
	switch op.kind {
	case "acquire", "fresh", "reenter": // fresh and reenter leave what Java's acquire leaves, when run once by a new owner / a holder
		return evalJava(ctx, rdb, javaAcquireLua, []string{wn.name}, op.leaseMs, op.field)
	case "unlock", "unlockDel":
		latch := wn.latchPrefix + op.req
		reply, err := evalJava(ctx, rdb, javaUnlockLua, []string{wn.name, wn.channel, latch},
			0, op.leaseMs, op.field, publish, latchMs)
		if err == nil && op.kind == "unlockDel" {
			err = rdb.Del(ctx, latch).Err()
		}
		return reply, err
	case "renew":
		var keys []string
		args := []any{op.leaseMs}
		for i := 0; i < len(op.renew); i += 2 {
			key := op.renew[i]
			if key == "" {
				key = wn.name
			}
			keys = append(keys, key)
			args = append(args, op.renew[i+1])
		}
		return evalJava(ctx, rdb, javaRenewLua, keys, args...)
	case "force":
		return evalJava(ctx, rdb, javaForceUnlockLua, []string{wn.name, wn.channel}, 0, publish)
	}
	return nil, fmt.Errorf("unknown op %q", op.kind)
}

// evalJava runs a fixture and returns its reply as Java reads it: nil, an
// int64 (a PTTL when the reply is the acquire's), or a []int64.
func evalJava(ctx context.Context, rdb *redis.Client, src string, keys []string, args ...any) (any, error) {
	reply, err := rdb.Eval(ctx, src, keys, args...).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return nil, nil
	case err != nil:
		return nil, err
	}
	switch r := reply.(type) {
	case int64:
		if src == javaAcquireLua {
			return pttl(r), nil
		}
		return r, nil
	case []any:
		out := make([]int64, len(r))
		for i, v := range r {
			out[i], _ = v.(int64)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected reply %#v", reply)
}

// oneIf is 1 for true and 0 for false, as Redisson's scripts answer.
func oneIf(ok bool) int64 {
	if ok {
		return 1
	}
	return 0
}

func mustField(field string) RedissonField {
	clientID, owner, _ := strings.Cut(field, ":")
	f, err := NewRedissonField(clientID, owner)
	if err != nil {
		panic(err)
	}
	return f
}

func mustKeys(name string) RedissonKeys {
	k, err := RedissonNamespace{LatchTTL: latchMs * time.Millisecond}.Keys(name)
	if err != nil {
		panic(err)
	}
	return k
}

// snapshotKeys reads every key: its type, value, DUMP bytes and PTTL.
func snapshotKeys(ctx context.Context, t *testing.T, admin *redis.Client) map[string]any {
	t.Helper()
	keys, err := admin.Keys(ctx, "*").Result()
	require.NoError(t, err)
	state := map[string]any{}
	for _, key := range keys {
		typ, err := admin.Type(ctx, key).Result()
		require.NoError(t, err)
		var value any
		switch typ {
		case "hash":
			value, err = admin.HGetAll(ctx, key).Result()
		case "string":
			value, err = admin.Get(ctx, key).Result()
		}
		require.NoError(t, err)
		dump, err := admin.Dump(ctx, key).Result()
		require.NoError(t, err)
		ms, err := admin.PTTL(ctx, key).Result()
		require.NoError(t, err)
		state[key+" type"] = typ
		state[key+" value"] = value
		state[key+" dump"] = []byte(dump)
		state[key+" pttl"] = pttl(ms.Milliseconds())
	}
	return state
}

// captureMessages subscribes to every PUBLISH channel and, sharded, to
// channel, and returns a function that returns the messages published
// since its last call: it publishes a marker both ways and reads up to it.
func captureMessages(ctx context.Context, t *testing.T, admin *redis.Client, channel string) func() []string {
	t.Helper()
	const marker = "-- end of step --"
	psub := admin.PSubscribe(ctx, "*")
	ssub := admin.SSubscribe(ctx, channel)
	for _, sub := range []*redis.PubSub{psub, ssub} {
		t.Cleanup(func() { _ = sub.Close() })
		_, err := sub.Receive(ctx)
		require.NoError(t, err)
	}
	return func() []string {
		t.Helper()
		require.NoError(t, admin.Publish(ctx, channel, marker).Err())
		require.NoError(t, admin.SPublish(ctx, channel, marker).Err())
		var got []string
		for _, s := range []struct {
			cmd string
			sub *redis.PubSub
		}{{"publish", psub}, {"spublish", ssub}} {
			for {
				msg, err := s.sub.ReceiveMessage(ctx)
				require.NoError(t, err)
				if msg.Payload == marker {
					break
				}
				got = append(got, s.cmd+" "+msg.Channel+" "+msg.Payload)
			}
		}
		return got
	}
}
