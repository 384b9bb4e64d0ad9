package bench

import (
	"context"
	"crypto/rand"
	_ "embed"
	"time"

	"github.com/redis/go-redis/v9"
)

// The multi-lock scenario and its contestants.
const (
	// multiLock is the multi-lock scenario's name.
	multiLock = "multi-lock"
	// BatonMultiName is baton's LockAll, the algorithm under test of the
	// multi-lock scenario.
	BatonMultiName = "baton-multi"
	// RedissonMultiName is Redisson's MultiLock algorithm (redissonMulti).
	RedissonMultiName = "redisson-multilock"
	// ObtainMultiName is bsm/redislock's ObtainMulti algorithm with a 1 ms
	// retry (obtainMulti).
	ObtainMultiName = "obtainmulti-1ms"
)

// MultiScenarios returns the multi-lock workload, running for d: 16
// workers each taking sets of 2 to 6 of 16 names, holding 1 ms. A worker
// draws its sets from its own seeded generator, so that every algorithm
// sees the same sequence of sets, each in the same order.
func MultiScenarios(d time.Duration) []Scenario {
	return []Scenario{
		{Name: multiLock, Kind: KindMulti, Workers: 16, Hold: time.Millisecond, Names: 16, SetMin: 2, SetMax: 6, Duration: d},
	}
}

// MultiAlgorithms returns the contestants of the multi-lock scenario, in
// table order.
func MultiAlgorithms() []Algorithm {
	return []Algorithm{
		{Name: BatonMultiName, NewMulti: newBatonMulti},
		{Name: RedissonMultiName, NewMulti: newRedissonMulti},
		{Name: ObtainMultiName, NewMulti: newObtainMulti},
	}
}

// batonMulti is baton's LockAll on one rlock.Client, as one process would
// have, with the default watchdog lease.
type batonMulti struct{ batonLocker }

func newBatonMulti(e Env) (MultiLocker, error) {
	l, err := newBaton()(e)
	if err != nil {
		return nil, err
	}
	return batonMulti{l.(batonLocker)}, nil
}

func (b batonMulti) LockAll(ctx context.Context, names []string) (Held, error) {
	s, err := b.c.LockAll(ctx, names)
	if err != nil {
		return nil, err
	}
	return s, nil
}

var (
	//go:embed lua/obtain_multi.lua
	obtainMultiLua string
	//go:embed lua/release_multi.lua
	releaseMultiLua string

	obtainMultiScript  = redis.NewScript(obtainMultiLua)
	releaseMultiScript = redis.NewScript(releaseMultiLua)
)

// obtainMultiTag is the hash tag of every obtainMulti key: its script
// takes the whole set at once, which Redis allows only within one slot.
const obtainMultiTag = "{set}"

// obtainMulti is bsm/redislock's ObtainMulti, written for the bench from
// its rule (lua/obtain_multi.lua), since the released redislock (v0.9.4,
// the peers' version) has none: one script takes every key of the set
// with the holder's token, or none, and a caller that finds any key taken
// tries again 1 ms later (LinearBackoff(1ms)) until its context ends. The
// lease is PollLease, longer than any run.
type obtainMulti struct {
	rdb    redis.UniversalClient
	prefix string
}

func newObtainMulti(e Env) (MultiLocker, error) {
	return obtainMulti{rdb: e.Client, prefix: e.Prefix + obtainMultiTag}, nil
}

func (o obtainMulti) LockAll(ctx context.Context, names []string) (Held, error) {
	h := obtainedSet{rdb: o.rdb, keys: make([]string, len(names)), token: rand.Text()}
	for i, name := range names {
		h.keys[i] = o.prefix + name
	}
	for {
		taken, err := obtainMultiScript.Run(ctx, o.rdb, h.keys, h.token, PollLease.Milliseconds()).Int()
		if err != nil {
			return nil, err
		}
		if taken == 1 {
			return h, nil
		}
		if err := sleep(ctx, time.Millisecond); err != nil {
			return nil, err
		}
	}
}

func (obtainMulti) Close() error { return nil }

// obtainedSet is a set an obtainMulti took.
type obtainedSet struct {
	rdb   redis.UniversalClient
	keys  []string
	token string
}

func (h obtainedSet) Unlock(ctx context.Context) error {
	n, err := releaseMultiScript.Run(ctx, h.rdb, h.keys, h.token).Int()
	if err == nil && n == 0 {
		err = errNotHeld
	}
	return err
}
