package reentrant

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// The scripts of the Redisson format: lua/redisson_*.lua; those that set a
// lease come after the lease rule (redissonScript), and the acquire and the
// renewal after master.lua too (they refuse to run on a replica).
var (
	redissonAcquireScript     = redissonScript("master.lua", "redisson_acquire.lua")
	redissonUnlockScript      = redissonScript("redisson_unlock.lua")
	redissonRenewScript       = redissonScript("master.lua", "redisson_renew.lua")
	redissonForceUnlockScript = plainScript("redisson_force_unlock.lua")
)

// redissonScript is the script of files, run after redisson_lease.lua: a
// lock's expiry in Redisson's format only moves later, so that a client's
// validity, the latest lease it was granted, never outlasts the lock.
// That is the one deliberate difference from Redisson's scripts, which
// set the lease they are given, shorter or not.
func redissonScript(files ...string) *script {
	return newScript(luaFiles(append([]string{"redisson_lease.lua"}, files...)...)...)
}

// RedissonAcquireResult is the outcome of one acquire in Redisson's format.
type RedissonAcquireResult struct {
	// Acquired reports that the field holds the lock after the call.
	Acquired bool
	// HolderTTL, when not Acquired, is the lock's remaining lease as PTTL
	// reads it: zero in its last millisecond, negative when the lock has no
	// expiry (then only an unlock message ends the wait, as in Redisson).
	HolderTTL time.Duration
	// HoldGone reports that a Reenter found the field not holding the
	// lock: nothing changed.
	HoldGone bool
}

// The modes of redisson_acquire.lua.
const (
	redissonAcquireMode = "0"
	redissonFreshMode   = "1"
	redissonReenterMode = "2"
)

// redissonHoldGone is redisson_acquire.lua's reply to a reenter whose field
// does not hold the lock: no PTTL is ever -3.
const redissonHoldGone = -3

// Acquire takes the lock for field with lease, or re-enters it (counting
// one more hold and extending the lease) when field already holds it, as
// Redisson's acquire does but that a re-entry never shortens the lease.
// Under a requestID, the script records its outcome in the request's
// latch, and a resend or a replay under the same requestID returns that
// outcome instead of counting again: the first run under it decides. Once
// the reply is in, the caller deletes the latch with DropLatch. With
// requestID "" it runs as Redisson's does, and a resend counts again: use
// that only where no resend can happen.
func (k RedissonKeys) Acquire(ctx context.Context, rdb redis.Scripter, field RedissonField, requestID string, lease time.Duration) (RedissonAcquireResult, error) {
	return k.acquire(ctx, rdb, field, requestID, lease, redissonAcquireMode)
}

// Reenter counts one more hold of a field that holds the lock, and
// extends the lease, leaving what Redisson's acquire leaves then (but for
// a shorter lease, which Redisson's sets and Reenter does not). When field
// does not hold the lock it changes nothing and reports HoldGone: unlike
// Acquire, it never takes a lock its holder has lost (expired, or
// force-unlocked), so a holder's re-entry cannot hide the loss. A
// requestID makes it replayable, as for Acquire.
func (k RedissonKeys) Reenter(ctx context.Context, rdb redis.Scripter, field RedissonField, requestID string, lease time.Duration) (RedissonAcquireResult, error) {
	return k.acquire(ctx, rdb, field, requestID, lease, redissonReenterMode)
}

// AcquireFresh takes the lock for a field that held nothing before the
// call. A hold of field found by the script can then only be this call's
// own earlier run (go-redis resends a script on a read timeout): it is
// reported as acquired and not counted again, so a resend leaves the same
// state as one run, with no latch. The state one run leaves is Acquire's.
func (k RedissonKeys) AcquireFresh(ctx context.Context, rdb redis.Scripter, field RedissonField, lease time.Duration) (RedissonAcquireResult, error) {
	return k.acquire(ctx, rdb, field, "", lease, redissonFreshMode)
}

// acquire runs redisson_acquire.lua in mode for Acquire, AcquireFresh and
// Reenter, under requestID's latch unless it is "".
func (k RedissonKeys) acquire(ctx context.Context, rdb redis.Scripter, field RedissonField, requestID string, lease time.Duration, mode string) (RedissonAcquireResult, error) {
	ms, err := k.args(field, lease)
	if err != nil {
		return RedissonAcquireResult{}, err
	}
	keys, args := []string{k.Hash}, []any{ms, field.s, mode}
	if requestID != "" {
		keys, args = append(keys, k.LatchKey(requestID)), append(args, k.latchTTL.Milliseconds())
	}
	pttl, err := redissonAcquireScript.Run(ctx, rdb, keys, args...).Int64()
	switch {
	case errors.Is(err, redis.Nil):
		return RedissonAcquireResult{Acquired: true}, nil
	case err != nil:
		return RedissonAcquireResult{}, fmt.Errorf("reentrant: redisson acquire %q: %w", k.Name, err)
	case pttl == redissonHoldGone:
		return RedissonAcquireResult{HoldGone: true}, nil
	}
	return RedissonAcquireResult{HolderTTL: time.Duration(pttl) * time.Millisecond}, nil
}

// Unlock leaves one of field's holds, under requestID: a partial unlock
// extends the lock's lease to lease (never shortening it, where
// Redisson's sets it) and publishes nothing; the final one deletes the
// lock and publishes RedissonUnlockMessage on its channel. The script sets
// the request's latch for the namespace's LatchTTL, so a resend of the
// script (go-redis resends on a read timeout) replays the first result
// instead of leaving a second hold. Once the reply is in, the caller
// deletes the latch with DropLatch, as Redisson does, without waiting for
// it; never before, or a resend would run again. requestID must be new for
// each unlock (Redisson's: 16 random bytes in lowercase hex). lease is
// what Redisson calls internalLockLeaseTime: the hold's fixed lease, or
// the watchdog's.
func (k RedissonKeys) Unlock(ctx context.Context, rdb redis.Scripter, field RedissonField, requestID string, lease time.Duration) (ReleaseStatus, error) {
	ms, err := k.args(field, lease)
	if err != nil {
		return NotHeld, err
	}
	if requestID == "" {
		return NotHeld, fmt.Errorf("%w: empty", ErrInvalidRequestID)
	}
	keys := []string{k.Hash, k.Channel, k.LatchKey(requestID)}
	n, err := redissonUnlockScript.Run(ctx, rdb, keys, field.s, ms, k.latchTTL.Milliseconds(),
		k.publishCommand(), RedissonUnlockMessage).Int64()
	if err != nil {
		return NotHeld, fmt.Errorf("reentrant: redisson unlock %q: %w", k.Name, err)
	}
	switch n {
	case -1:
		return NotHeld, nil
	case 0:
		return StillHeld, nil
	case 1:
		return Released, nil
	}
	return NotHeld, fmt.Errorf("reentrant: redisson unlock %q: unexpected reply %d", k.Name, n)
}

// DropLatch deletes request requestID's latch, once its Unlock (or
// Acquire, or Reenter) has replied, as Redisson's unlock does after the
// script. Only memory depends
// on it: a latch that stays expires after LatchTTL, and no later call uses
// the same request ID.
func (k RedissonKeys) DropLatch(ctx context.Context, rdb redis.Cmdable, requestID string) error {
	return rdb.Del(ctx, k.LatchKey(requestID)).Err()
}

// Renew extends the lock's lease to lease when field still holds it, as
// Redisson's watchdog does (but never shortens it), and reports whether
// field did; false means the hold is lost.
func (k RedissonKeys) Renew(ctx context.Context, rdb redis.Scripter, field RedissonField, lease time.Duration) (bool, error) {
	renewed, err := RedissonRenewBatch(ctx, rdb, []RedissonHold{{Keys: k, Field: field}}, lease)
	if err != nil {
		return false, err
	}
	return renewed[0], nil
}

// RedissonHold names one field's hold on one lock, for batched renewal.
type RedissonHold struct {
	Keys  RedissonKeys
	Field RedissonField
}

// RedissonRenewBatch renews holds in one script call, each to lease while
// its field still holds its lock, as Redisson's watchdog renews a chunk of
// locks: one round trip for all of them. On a cluster every hold's lock
// must be in one slot (the caller groups holds by slot, as Redisson does).
// renewed[i] reports whether holds[i] was renewed; false means its field is
// gone and the hold is lost.
func RedissonRenewBatch(ctx context.Context, rdb redis.Scripter, holds []RedissonHold, lease time.Duration) (renewed []bool, err error) {
	ms, err := leaseMillis(lease)
	if err != nil || len(holds) == 0 {
		return nil, err
	}
	keys := make([]string, len(holds))
	args := make([]any, 1, 1+len(holds))
	args[0] = ms
	for i, h := range holds {
		if err := h.Keys.check(); err != nil {
			return nil, err
		}
		if err := h.Field.check(); err != nil {
			return nil, err
		}
		keys[i] = h.Keys.Hash
		args = append(args, h.Field.s)
	}
	reply, err := redissonRenewScript.Run(ctx, rdb, keys, args...).Int64Slice()
	if err != nil {
		return nil, fmt.Errorf("reentrant: redisson renew %q: %w", holds[0].Keys.Name, err)
	}
	if len(reply) != len(holds) {
		return nil, fmt.Errorf("reentrant: redisson renew: %d replies for %d holds", len(reply), len(holds))
	}
	renewed = make([]bool, len(reply))
	for i, n := range reply {
		renewed[i] = n == 1
	}
	return renewed, nil
}

// ForceUnlock deletes the lock whoever holds it and publishes
// RedissonUnlockMessage on its channel, as Redisson's forceUnlock does. It
// reports whether the lock existed; a resent call (after a lost reply)
// reports false, having published once.
func (k RedissonKeys) ForceUnlock(ctx context.Context, rdb redis.Scripter) (bool, error) {
	if err := k.check(); err != nil {
		return false, err
	}
	n, err := redissonForceUnlockScript.Run(ctx, rdb, []string{k.Hash, k.Channel},
		k.publishCommand(), RedissonUnlockMessage).Int64()
	if err != nil {
		return false, fmt.Errorf("reentrant: redisson force-unlock %q: %w", k.Name, err)
	}
	return n == 1, nil
}

// args checks the keys, the field and the lease, and returns the lease in ms.
func (k RedissonKeys) args(field RedissonField, lease time.Duration) (int64, error) {
	if err := k.check(); err != nil {
		return 0, err
	}
	if err := field.check(); err != nil {
		return 0, err
	}
	return leaseMillis(lease)
}
