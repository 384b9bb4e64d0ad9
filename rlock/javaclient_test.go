package rlock

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// javaClient is a second, independent client of Redisson's RLock format,
// written from the format and Redisson 4.7.0's own scripts (the fixtures
// in reentrant/testdata/redisson), run with go-redis as a Java client runs
// them: EVAL with Java's KEYS and ARGV. It shares nothing with wire.go.
type javaClient struct {
	t    *testing.T
	rdb  *redis.Client
	uuid string // the Redisson instance's ID
	lua  map[string]string
}

const javaUUID = "2d1f5c6e-8a4b-4f0e-9c3d-1b2a3c4d5e6f"

func newJavaClient(t *testing.T, rdb *redis.Client) *javaClient {
	j := &javaClient{t: t, rdb: rdb, uuid: javaUUID, lua: map[string]string{}}
	for _, s := range []string{"acquire", "unlock", "renew", "force_unlock"} {
		src, err := os.ReadFile("../reentrant/testdata/redisson/" + s + ".lua")
		require.NoError(t, err)
		j.lua[s] = string(src)
	}
	return j
}

// channel is Java's getChannelName: prefixName of the raw name.
func javaChannel(name string) string {
	if strings.Contains(name, "{") {
		return "redisson_lock__channel:" + name
	}
	return "redisson_lock__channel:{" + name + "}"
}

func (j *javaClient) field(thread int) string { return j.uuid + ":" + strconv.Itoa(thread) }

// tryAcquire is tryLockInnerAsync: nil (-1 here) when acquired, else PTTL.
func (j *javaClient) tryAcquire(ctx context.Context, name string, thread int, lease time.Duration) (acquired bool, pttl time.Duration) {
	n, err := j.rdb.Eval(ctx, j.lua["acquire"], []string{name}, lease.Milliseconds(), j.field(thread)).Int64()
	if errors.Is(err, redis.Nil) {
		return true, 0
	}
	require.NoError(j.t, err)
	return false, time.Duration(n) * time.Millisecond
}

// lock is RLock.lock(lease): try, subscribe, then retry on every message
// or when the holder's PTTL has run out, until acquired or ctx ends.
func (j *javaClient) lock(ctx context.Context, name string, thread int, lease time.Duration) error {
	if ok, _ := j.tryAcquire(ctx, name, thread, lease); ok {
		return nil
	}
	ps := j.rdb.Subscribe(ctx, javaChannel(name))
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil { // the confirmation
		return err
	}
	for {
		ok, pttl := j.tryAcquire(ctx, name, thread, lease)
		if ok {
			return nil
		}
		wait := time.Second
		if pttl >= 0 {
			wait = pttl + time.Millisecond
		}
		rctx, cancel := context.WithTimeout(ctx, wait)
		_, err := ps.ReceiveMessage(rctx)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		_ = err // a message or the PTTL: try again
	}
}

// unlock is unlockInnerAsync, then the DEL of the latch: the reply is
// 1 released, 0 still held, nil not held (-1 here).
func (j *javaClient) unlock(ctx context.Context, name string, thread int, lease time.Duration, requestID string) int64 {
	latch := "redisson_unlock_latch:" + strings.TrimPrefix(javaChannel(name), "redisson_lock__channel:") + ":" + requestID
	n, err := j.rdb.Eval(ctx, j.lua["unlock"], []string{name, javaChannel(name), latch},
		0, lease.Milliseconds(), j.field(thread), "PUBLISH", 17000).Int64()
	if errors.Is(err, redis.Nil) {
		n, err = -1, nil
	}
	require.NoError(j.t, err)
	require.NoError(j.t, j.rdb.Del(ctx, latch).Err())
	return n
}

// forceUnlock is forceUnlockAsync.
func (j *javaClient) forceUnlock(ctx context.Context, name string) bool {
	n, err := j.rdb.Eval(ctx, j.lua["force_unlock"], []string{name, javaChannel(name)}, 0, "PUBLISH").Int64()
	require.NoError(j.t, err)
	return n == 1
}
