package reentrant

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/notify/slot"
)

// Every name either derives keys that all live in one cluster slot, the
// slot of the name itself, or is refused with ErrInvalidName; and every
// script runs on the keys of every valid name without an error.
func FuzzLockName(f *testing.F) {
	for _, seed := range []struct{ prefix, name string }{
		{"", "orders/42"}, {"app:", "x"}, {"", ""}, {"", "{x}"}, {"", "a}b{"}, {"a{", "x"},
		{"", "\x00\xff binary"}, {"", "ünïcödé 🔒"}, {"", "--"}, {"", "a b\r\n"},
		{"", strings.Repeat("n", MaxNameLen)}, {"", strings.Repeat("n", MaxNameLen+1)},
	} {
		f.Add(seed.prefix, seed.name)
	}
	rdb := miniredisClient(f, miniredis.RunT(f))
	f.Fuzz(func(t *testing.T, prefix, name string) {
		l, err := Namespace{Prefix: prefix}.Keys(name)
		switch {
		case name == "" || len(name) > MaxNameLen || strings.ContainsAny(name, "{}"):
			require.ErrorIs(t, err, ErrInvalidName)
			return
		case strings.ContainsAny(prefix, "{}"):
			require.ErrorIs(t, err, ErrInvalidPrefix)
			return
		}
		require.NoError(t, err)
		if prefix == "" {
			prefix = DefaultPrefix
		}
		require.Equal(t, prefix+"{"+name+"}", l.Hash)
		want := slot.Of(name)
		for _, k := range []string{l.Hash, l.Fence, l.Queue, l.Granted, l.RequestKey("r1")} {
			require.Equal(t, want, slot.Of(k), "%q is not in the slot of %q", k, name)
		}
		runEveryScript(t, rdb, l)
	})
}

// runEveryScript runs each script on l where it does its work: acquire,
// replay, contended acquire, re-entry, renew, inspect, partial and final
// release, force-release of a held and of a free lock, and a release that
// publishes to a dead waiter and leaves more dead queue entries than one
// script drops to the passes.
func runEveryScript(t *testing.T, rdb *redis.Client, l Keys) {
	ctx := context.Background()
	require.NoError(t, rdb.FlushAll(ctx).Err())
	const lease = time.Second
	r, err := l.Acquire(ctx, rdb, "A", "r1", lease, 0, Waiter{})
	require.NoError(t, err)
	require.True(t, r.Acquired)
	require.EqualValues(t, 1, r.HoldCount)
	require.Positive(t, r.Token)
	first := r.Token
	r, err = l.Acquire(ctx, rdb, "A", "r1", lease, 0, Waiter{})
	require.NoError(t, err)
	require.Equal(t, AcquireResult{Acquired: true, HoldCount: 1, Token: first, Reported: true}, r, "replayed")
	r, err = l.AcquireNew(ctx, rdb, "B", lease, Waiter{})
	require.NoError(t, err)
	require.False(t, r.Acquired)
	require.Positive(t, r.HolderTTL)
	r, err = l.Acquire(ctx, rdb, "A", "r2", lease, 0, Waiter{})
	require.NoError(t, err)
	require.EqualValues(t, 2, r.HoldCount)
	renewed, errs := RenewAll(ctx, rdb, [][]HoldRef{{{Keys: l, Owner: "A", Token: first}}}, lease)
	require.NoError(t, errs[0])
	require.Equal(t, []bool{true}, renewed[0])
	st, err := l.Inspect(ctx, rdb)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"A": 2}, st.Holders)
	rel, err := l.Release(ctx, rdb, "A", currentToken(t, rdb, l), "r3")
	require.NoError(t, err)
	require.Equal(t, StillHeld, rel.Status)
	rel, err = l.Release(ctx, rdb, "A", currentToken(t, rdb, l), "r4")
	require.NoError(t, err)
	require.Equal(t, Released, rel.Status)
	r, err = l.AcquireNew(ctx, rdb, "B", lease, Waiter{})
	require.NoError(t, err)
	require.True(t, r.Acquired)
	held := currentToken(t, rdb, l)
	deleted, err := l.ForceRelease(ctx, rdb, "force-fuzz-1")
	require.NoError(t, err)
	require.Equal(t, held, deleted)
	deleted, err = l.ForceRelease(ctx, rdb, "force-fuzz-2")
	require.NoError(t, err)
	require.Zero(t, deleted, "already free")
	r, err = l.AcquireNew(ctx, rdb, "C", lease, Waiter{})
	require.NoError(t, err)
	// A waiter nobody listens for: the grant runs its write probe and
	// publishes to it, and drops it.
	_, err = l.AcquireNew(ctx, rdb, "D", lease, l.Waiter("gone", "gone"))
	require.NoError(t, err)
	for i := range 40 { // entries no grant can read are dropped as dead
		require.NoError(t, rdb.RPush(ctx, l.Queue, fmt.Sprint("junk-", i)).Err())
	}
	rel, err = l.Release(ctx, rdb, "C", r.Token, "r5")
	require.NoError(t, err)
	require.Equal(t, Released, rel.Status)
	require.Zero(t, rdb.LLen(ctx, l.Queue).Val(), "the passes dropped them all")
}

// miniredisClient connects to mr, and fails a call that hangs rather than
// waiting and retrying, so the fuzzer reports it with its input.
func miniredisClient(tb testing.TB, mr *miniredis.Miniredis) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), ReadTimeout: 2 * time.Second, MaxRetries: -1})
	tb.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Random sequences of acquire (with a request ID, or as a new owner),
// release, replays of earlier requests, renew, force-release and the
// passing of time, by three owners on one lock, run on miniredis and on a
// model of the lock written from the scripts' documented rules. After every
// step the results and the lock's state must agree with the model.
func FuzzOperations(f *testing.F) {
	for _, seed := range []string{
		"\x00\x00\x00\x00\x02\x00\x02\x00",                 // acquire, re-enter, release twice
		"\x00\x00\x00\x01\x02\x00\x00\x01",                 // A holds, B waits, A releases, B takes it
		"\x00\x00\x03\x00\x03\x00\x02\x00\x04\x00\x04\x00", // replays of an acquire and a release
		"\x00\x00\x07\x03\x00\x01",                         // A's lease runs out, B takes the lock
		"\x01\x00\x01\x00\x00\x00\x06\x00\x01\x01",         // new owner, force-release, new holder
		"\x00\x30\x00\x00\x07\x00\x05\x00\x07\x02\x02\x00", // leases, renewal, time
	} {
		f.Add([]byte(seed))
	}
	mr := miniredis.RunT(f)
	rdb := miniredisClient(f, mr)
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 128 {
			ops = ops[:128]
		}
		mr.FlushAll()
		ns := Namespace{RequestTTL: modelRequestTTL}
		l, err := ns.Keys("fuzz")
		require.NoError(t, err)
		// A counter ahead of a server clock stopped at the epoch keeps
		// tokens predictable; the clock's part has tests of its own.
		mr.SetTime(time.Unix(0, 0))
		require.NoError(t, mr.Set(l.Fence, strconv.Itoa(modelFenceStart)))
		m := &model{reqs: map[string]modelReq{}, fence: modelFenceStart}
		var acquires, releases []request
		var trace []string
		ctx := context.Background()
		for i := 0; i+1 < len(ops); i += 2 {
			kind, arg := ops[i]%numOps, ops[i+1]
			owner := string(rune('A' + arg%3))
			lease := time.Duration(1+(arg>>4)%4) * 250 * time.Millisecond
			step := fmt.Sprintf("%d:%s", i/2, opNames[kind])
			fail := func(format string, args ...any) {
				t.Fatalf("after %s: %s\nsteps: %s", step, fmt.Sprintf(format, args...), strings.Join(trace, " "))
			}
			switch kind {
			case opAcquire, opReplayAcquire:
				req := request{owner, fmt.Sprintf("a%d", i), lease}
				if kind == opReplayAcquire {
					if len(acquires) == 0 {
						continue
					}
					req = acquires[int(arg)%len(acquires)]
				} else {
					acquires = append(acquires, req)
				}
				step += fmt.Sprintf("(%s,%s,%v)", req.owner, req.id, req.lease)
				got, err := l.Acquire(ctx, rdb, req.owner, req.id, req.lease, 0, Waiter{})
				if want := m.acquire(req.owner, req.id, req.lease); err != nil || got != want {
					fail("got %+v, %v; want %+v", got, err, want)
				}
			case opAcquireNew:
				step += fmt.Sprintf("(%s,%v)", owner, lease)
				got, err := l.AcquireNew(ctx, rdb, owner, lease, Waiter{})
				if want := m.acquireNew(owner, lease); err != nil || got != want {
					fail("got %+v, %v; want %+v", got, err, want)
				}
			case opRelease, opReplayRelease:
				req := request{owner, fmt.Sprintf("r%d", i), lease}
				if kind == opReplayRelease {
					if len(releases) == 0 {
						continue
					}
					req = releases[int(arg)%len(releases)]
				} else {
					releases = append(releases, req)
				}
				step += fmt.Sprintf("(%s,%s,%v)", req.owner, req.id, req.lease)
				got, err := l.Release(ctx, rdb, req.owner, currentToken(t, rdb, l), req.id)
				if want := m.release(req.owner, req.id); err != nil || got != want {
					fail("got %+v, %v; want %+v", got, err, want)
				}
			case opRenew:
				step += fmt.Sprintf("(%s,%v)", owner, lease)
				got, err := l.Renew(ctx, rdb, owner, currentToken(t, rdb, l), lease)
				if want := m.renew(owner, lease); err != nil || got != want {
					fail("got %v, %v; want %v", got, err, want)
				}
			case opForce:
				got, err := l.ForceRelease(ctx, rdb, "force-fuzz-3")
				if want := m.force(); err != nil || got != want {
					fail("got %v, %v; want %v", got, err, want)
				}
			case opAdvance:
				d := time.Duration(1+arg%8) * 250 * time.Millisecond
				step += fmt.Sprintf("(%v)", d)
				mr.FastForward(d)
				m.advance(d)
			}
			trace = append(trace, step)
			st, err := l.Inspect(ctx, rdb)
			if want := m.state(); err != nil || !equalState(st, want) {
				fail("state %+v, %v; want %+v", st, err, want)
			}
		}
	})
}

const (
	opAcquire = iota
	opAcquireNew
	opRelease
	opReplayAcquire
	opReplayRelease
	opRenew
	opForce
	opAdvance
	numOps
)

var opNames = [numOps]string{"acquire", "acquireNew", "release", "replayAcquire", "replayRelease", "renew", "force", "advance"}

// modelFenceStart is where the fuzzed lock's fencing counter starts.
const modelFenceStart = 1000

// modelRequestTTL is short enough for the fuzzer to reach replays of
// forgotten requests by letting time pass.
const modelRequestTTL = 1500 * time.Millisecond

type request struct {
	owner, id string
	lease     time.Duration
}

// model is the lock as the scripts' comments describe it: one owner at a
// time with a hold count, a lease that re-entry never shortens, a fencing
// counter that rises on every 0→1 acquisition and expires two leases past
// its token's time (the server clock stands at the epoch), and request
// results remembered for modelRequestTTL.
type model struct {
	owner    string // "" when free
	count    int64
	ttl      time.Duration
	fence    uint64        // 0 when the counter is gone
	fenceTTL time.Duration // 0 when the counter never expires
	now      time.Duration
	reqs     map[string]modelReq
}

type modelReq struct {
	count, token int64
	expires      time.Duration
}

func (m *model) take(owner string, lease time.Duration) AcquireResult {
	m.fence++
	m.fenceTTL = time.Duration(m.fence/1000)*time.Millisecond + 2*lease
	m.owner, m.count, m.ttl = owner, 1, lease
	return AcquireResult{Acquired: true, HoldCount: 1, Token: m.fence}
}

func (m *model) remember(id string, count int64, token uint64) {
	m.reqs[id] = modelReq{count: count, token: int64(token), expires: m.now + modelRequestTTL}
}

func (m *model) acquire(owner, id string, lease time.Duration) AcquireResult {
	switch {
	case m.owner == owner:
		// A remembered request replays while its owner holds the lock.
		if r, ok := m.reqs[id]; ok {
			return AcquireResult{Acquired: true, HoldCount: r.count, Token: uint64(r.token), Reported: true}
		}
		m.count++
		m.extend(lease)
		m.remember(id, m.count, m.fence)
		return AcquireResult{Acquired: true, HoldCount: m.count, Token: m.fence}
	case m.owner != "":
		return AcquireResult{HolderTTL: m.ttl}
	}
	r := m.take(owner, lease)
	m.remember(id, 1, r.Token)
	return r
}

// acquireNew is acquire for an owner made for one call: any hold it has is
// that call's, reported and not counted again.
func (m *model) acquireNew(owner string, lease time.Duration) AcquireResult {
	switch {
	case m.owner == owner:
		return AcquireResult{Acquired: true, HoldCount: m.count, Token: m.fence, Reported: true}
	case m.owner != "":
		return AcquireResult{HolderTTL: m.ttl}
	}
	return m.take(owner, lease)
}

func (m *model) release(owner, id string) ReleaseResult {
	if r, ok := m.reqs[id]; ok {
		return releaseResult(r.count)
	}
	if m.owner != owner {
		return ReleaseResult{Status: NotHeld}
	}
	m.count-- // the lease stays as it is
	if m.count == 0 {
		m.owner = ""
	}
	m.remember(id, m.count, 0)
	return releaseResult(m.count)
}

func releaseResult(n int64) ReleaseResult {
	if n == 0 {
		return ReleaseResult{Status: Released}
	}
	return ReleaseResult{Status: StillHeld, Remaining: n}
}

func (m *model) renew(owner string, lease time.Duration) bool {
	if m.owner != owner {
		return false
	}
	m.extend(lease)
	return true
}

// extend gives the hold lease from now unless it has more: a lease is
// never shortened, and the counter is kept two leases from now.
func (m *model) extend(lease time.Duration) {
	if m.ttl < lease {
		m.ttl = lease
		if m.fenceTTL > 0 {
			m.fenceTTL = max(m.fenceTTL, 2*lease)
		}
	}
}

// force returns the token of the hold it deleted, 0 when none.
func (m *model) force() uint64 {
	if m.owner == "" {
		return 0
	}
	m.owner = ""
	return m.fence
}

func (m *model) advance(d time.Duration) {
	m.now += d
	if m.fenceTTL > 0 {
		if m.fenceTTL -= d; m.fenceTTL <= 0 {
			m.fence, m.fenceTTL = 0, 0
		}
	}
	if m.owner != "" {
		if m.ttl -= d; m.ttl <= 0 {
			m.owner = ""
		}
	}
	for id, r := range m.reqs {
		if r.expires <= m.now {
			delete(m.reqs, id)
		}
	}
}

func (m *model) state() State {
	if m.owner == "" {
		return State{Holders: map[string]int64{}, TTL: -2 * time.Millisecond, LastToken: m.fence}
	}
	return State{Holders: map[string]int64{m.owner: m.count}, TTL: m.ttl, LastToken: m.fence}
}

func equalState(a, b State) bool {
	return fmt.Sprint(a.Holders) == fmt.Sprint(b.Holders) && a.TTL == b.TTL && a.LastToken == b.LastToken
}
