package reentrant

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/grant.lua
	grantLua string
	//go:embed lua/acquire.lua
	acquireLua string
	//go:embed lua/leave.lua
	leaveLua string
	//go:embed lua/release.lua
	releaseLua string
	//go:embed lua/renew.lua
	renewLua string
	//go:embed lua/force_release.lua
	forceReleaseLua string
	//go:embed lua/pass.lua
	passLua string
	//go:embed lua/inspect.lua
	inspectLua string

	// Scripts run by EVALSHA; redis.Script falls back to EVAL on NOSCRIPT.
	// Those that can leave a lock free start with the baton pass.
	acquireScript      = redis.NewScript(grantLua + acquireLua)
	releaseScript      = redis.NewScript(grantLua + releaseLua)
	forceReleaseScript = redis.NewScript(grantLua + forceReleaseLua)
	leaveScript        = redis.NewScript(grantLua + leaveLua)
	passScript         = redis.NewScript(grantLua + passLua)
	renewScript        = redis.NewScript(renewLua)
	inspectScript      = redis.NewScript(inspectLua)
)

// Waiter is one call waiting in a lock's queue.
type Waiter struct {
	// ID names the waiter among the lock's waiters; it must not contain a
	// space. Empty means the call does not queue.
	ID string
	// Channel is where its grant is published: Keys.GrantChannel of its
	// client.
	Channel string
	// Alive is its client's liveness key (Keys.AliveKey) where the
	// namespace judges liveness by key, empty otherwise. Use Keys.Waiter.
	Alive string
}

// record is how w waits in the queue for owner, with a lease of ms: one
// list element holding all its grant needs, so that the grant reads the
// head with one LINDEX and no other lookup. Where liveness is judged by
// key, a grant's lease holds only for the key's TTL (aliveMs) until the
// waiter confirms it. The lengths make any owner, channel and key parse
// back (see parseWaiter in grant.lua), and the same call always writes the
// same record, which is how it finds itself in the queue and leaves it.
func (w Waiter) record(owner string, ms, aliveMs int64, shared bool) string {
	flag := "0"
	if shared {
		flag = "1"
	}
	unconfirmed := ms
	if w.Alive != "" && aliveMs > 0 {
		unconfirmed = min(ms, aliveMs)
	}
	return fmt.Sprintf("%s %d %d %s %d %d %s%s%s", w.ID, ms, unconfirmed, flag, len(w.Channel), len(w.Alive), w.Channel, w.Alive, owner)
}

// Grant is a grant message, as a waiter's client receives it.
type Grant struct {
	Waiter string // the waiter it is addressed to
	Lock   string // the name of the lock it grants
	Token  uint64 // the token of the hold it grants
	Owner  string // the owner the hold was granted to
	// Unconfirmed is the lease the hold has until its waiter confirms the
	// grant (a renewal, or a look), where liveness is judged by key; zero
	// when the grant already has the lease the waiter asked for.
	Unconfirmed time.Duration
}

// ParseGrant reads a grant message: the waiter's ID, a space, and a JSON
// object with the token (a string), the owner, the lock's hash key and,
// where the grant's lease holds only until confirmed, that lease in ms.
func ParseGrant(msg string) (Grant, error) {
	waiter, body, _ := strings.Cut(msg, " ")
	m, err := decodeGrantBody(body)
	token, terr := strconv.ParseUint(m.Token, 10, 64)
	// The name is the hash tag: the prefix cannot contain a brace.
	from, to := strings.IndexByte(m.Hash, '{'), strings.LastIndexByte(m.Hash, '}')
	if err != nil || terr != nil || waiter == "" || from < 0 || to <= from {
		return Grant{}, fmt.Errorf("reentrant: not a grant message: %q", msg)
	}
	return Grant{Waiter: waiter, Lock: m.Hash[from+1 : to], Token: token, Owner: m.Owner,
		Unconfirmed: time.Duration(m.Unconfirmed) * time.Millisecond}, nil
}

// ErrInvalidLease reports a lease that is not positive.
var ErrInvalidLease = errors.New("reentrant: lease must be positive")

// ErrNotHeld is what RenewAll reports for a hold whose owner no longer holds
// the lock.
var ErrNotHeld = errors.New("reentrant: lock not held by this owner")

// AcquireResult is the outcome of one acquire attempt.
type AcquireResult struct {
	// Acquired reports that the owner holds the lock after the call.
	Acquired bool
	// HoldCount is the owner's hold count after the call (when Acquired).
	HoldCount int64
	// Token is the fencing token of the owner's hold (when Acquired).
	Token uint64
	// HolderTTL is the remaining lease of the current holder when not
	// Acquired, as PTTL reads it: zero in the lease's last millisecond,
	// negative when Redis reported no expiry.
	HolderTTL time.Duration
	// HoldGone reports that the hold a re-entry named by token no longer
	// exists: nothing changed.
	HoldGone bool
	// Reported (when Acquired) says the hold was there before the call and
	// the call changed nothing, its lease included: a replay, or a waiter
	// finding the grant it was handed.
	Reported bool
	// Draining (when not Acquired) says the lock is free, but its queue
	// still starts with more entries that no longer listen than one call
	// drops (a bounded number, so that a call's time is bounded). Nothing
	// was taken, since live waiters may be behind them; a waiter is
	// queued. HolderTTL is zero: call again at once.
	Draining bool
}

// ReleaseStatus says what a release did.
type ReleaseStatus int

const (
	// NotHeld: the owner did not hold the lock; nothing changed.
	NotHeld ReleaseStatus = iota
	// StillHeld: one hold was left; the owner still holds the lock.
	StillHeld
	// Released: the last hold was left; the lock was deleted and published.
	Released
)

// String names the status.
func (s ReleaseStatus) String() string {
	switch s {
	case NotHeld:
		return "not held"
	case StillHeld:
		return "still held"
	case Released:
		return "released"
	}
	return "ReleaseStatus(" + strconv.Itoa(int(s)) + ")"
}

// ReleaseResult is the outcome of one release.
type ReleaseResult struct {
	Status ReleaseStatus
	// Remaining is the owner's hold count after the call.
	Remaining int64
}

// State is a snapshot of a lock, as Inspect reads it.
type State struct {
	// Holders maps owner ID to hold count; empty when the lock is free.
	Holders map[string]int64
	// TTL is the remaining lease; negative when the lock is free.
	TTL time.Duration
	// LastToken is the last fencing token handed out for this lock.
	LastToken uint64
}

// leaseMillis is lease in whole milliseconds, the resolution of PEXPIRE,
// rounded up: Redis must never expire a lock before the caller's lease ends.
func leaseMillis(lease time.Duration) (int64, error) {
	if lease <= 0 {
		return 0, fmt.Errorf("%w: got %v", ErrInvalidLease, lease)
	}
	return int64((lease + time.Millisecond - 1) / time.Millisecond), nil
}

// Acquire takes the lock for owner, or re-enters it when owner already holds
// it. With a non-zero token it only re-enters the hold of that token, and
// reports HoldGone when that hold no longer exists. requestID must be unique
// per logical attempt: a repeated call with the same ID replays the first
// result while the owner still holds the lock. The lease is applied rounded
// up to whole milliseconds, and re-entry never shortens the lease.
//
// With a Waiter, a call that finds the lock held joins its queue (once,
// however often it is repeated), and a free lock with a queue goes to the
// queue's head, which may be this waiter. Repeating the call is how a
// waiter checks whether it was granted the lock: it then reports the hold
// without counting it again. No call, with a Waiter or without, takes a
// free lock past a queue: it takes it only when the queue is empty or
// holds only entries that no longer listen, which it drops.
func (k Keys) Acquire(ctx context.Context, rdb redis.Scripter, owner, requestID string, lease time.Duration, token uint64, w Waiter) (AcquireResult, error) {
	return k.acquire(ctx, rdb, owner, requestID, lease, false, token, w)
}

// AcquireNew takes the lock for an owner ID made for this one call, which
// nothing else can hold: if owner already holds the lock, that hold can only
// come from an earlier run of this call (a resent command, or a retry after
// a lost reply), and it is reported as it is instead of counted again. So
// the common path needs no request key.
func (k Keys) AcquireNew(ctx context.Context, rdb redis.Scripter, owner string, lease time.Duration, w Waiter) (AcquireResult, error) {
	return k.acquire(ctx, rdb, owner, "", lease, true, 0, w)
}

func (k Keys) acquire(ctx context.Context, rdb redis.Scripter, owner, requestID string, lease time.Duration, newOwner bool, token uint64, w Waiter) (AcquireResult, error) {
	ms, err := leaseMillis(lease)
	if err != nil {
		return AcquireResult{}, err
	}
	keys := []string{k.Hash, k.Fence, k.RequestKey(requestID), k.Queue, k.Granted}
	isNew, record := "0", ""
	if newOwner {
		isNew = "1"
	}
	if w.ID != "" {
		record = w.record(owner, ms, k.aliveTTL.Milliseconds(), !newOwner)
	}
	args := []any{owner, ms, k.requestTTL.Milliseconds(), isNew,
		formatToken(token), w.ID, record, k.publish, w.Alive, k.aliveTTL.Milliseconds()}
	// A run that finds the lock free behind more dead entries than it may
	// drop takes nothing, and the next run goes on where it stopped. Each
	// run is the same call, a look for a waiter: repeating it is safe.
	for run := 1; ; run++ {
		res, err := k.acquireOnce(ctx, rdb, keys, args)
		if err != nil || !res.Draining || run == drainPasses {
			return res, err
		}
	}
}

// acquireOnce runs the acquire script once and reads its reply.
func (k Keys) acquireOnce(ctx context.Context, rdb redis.Scripter, keys []string, args []any) (AcquireResult, error) {
	reply, err := acquireScript.Run(ctx, rdb, keys, args...).Int64Slice()
	if err != nil {
		return AcquireResult{}, fmt.Errorf("reentrant: acquire %q: %w", k.Name, err)
	}
	switch {
	case (len(reply) == 3 || len(reply) == 4) && reply[0] == 1:
		return AcquireResult{Acquired: true, HoldCount: reply[1], Token: uint64(reply[2]), Reported: len(reply) == 4}, nil
	case len(reply) == 2 && reply[0] == 0:
		return AcquireResult{HolderTTL: time.Duration(reply[1]) * time.Millisecond}, nil
	case len(reply) == 1 && reply[0] == -1:
		return AcquireResult{HoldGone: true}, nil
	case len(reply) == 1 && reply[0] == 2:
		return AcquireResult{Draining: true}, nil
	}
	return AcquireResult{}, fmt.Errorf("reentrant: acquire %q: unexpected reply %v", k.Name, reply)
}

// Release leaves one of owner's holds on the hold of token; it reports
// NotHeld, changing nothing, when owner does not hold the lock under that
// token. The lease is left as it is. The last hold's release grants the
// lock to the oldest live waiter, if any, before it returns (see handOn).
// requestID makes a retried call replay the first result.
func (k Keys) Release(ctx context.Context, rdb redis.Scripter, owner string, token uint64, requestID string) (ReleaseResult, error) {
	keys := []string{k.Hash, k.Fence, k.RequestKey(requestID), k.Queue, k.Granted}
	n, err := releaseScript.Run(ctx, rdb, keys, owner, formatToken(token), k.requestTTL.Milliseconds(), k.publish).Int64()
	if err != nil {
		return ReleaseResult{}, fmt.Errorf("reentrant: release %q: %w", k.Name, err)
	}
	switch {
	case n == -2:
		k.handOn(ctx, rdb)
		return ReleaseResult{Status: Released}, nil
	case n < 0:
		return ReleaseResult{Status: NotHeld}, nil
	case n == 0:
		return ReleaseResult{Status: Released}, nil
	}
	return ReleaseResult{Status: StillHeld, Remaining: n}, nil
}

// Renew makes sure the lock has at least lease left when owner still holds
// it under token (it never shortens a lease), and reports whether owner did.
func (k Keys) Renew(ctx context.Context, rdb redis.Scripter, owner string, token uint64, lease time.Duration) (bool, error) {
	ms, err := leaseMillis(lease)
	if err != nil {
		return false, err
	}
	n, err := renewScript.Run(ctx, rdb, []string{k.Hash, k.Fence}, owner, formatToken(token), ms).Int64()
	if err != nil {
		return false, fmt.Errorf("reentrant: renew %q: %w", k.Name, err)
	}
	return n == 1, nil
}

// ForceRelease deletes the lock whoever holds it and grants it to the
// oldest live waiter, if any, before it returns (see handOn). It returns
// the token of the hold it deleted, or 0 when the lock was free.
func (k Keys) ForceRelease(ctx context.Context, rdb redis.Scripter) (uint64, error) {
	keys := []string{k.Hash, k.Fence, k.Queue, k.Granted}
	reply, err := forceReleaseScript.Run(ctx, rdb, keys, k.publish).Int64Slice()
	if err != nil {
		return 0, fmt.Errorf("reentrant: force-release %q: %w", k.Name, err)
	}
	if len(reply) != 2 {
		return 0, fmt.Errorf("reentrant: force-release %q: unexpected reply %v", k.Name, reply)
	}
	if reply[1] == 1 {
		k.handOn(ctx, rdb)
	}
	return uint64(reply[0]), nil
}

// Leave takes waiter w out of the queue, where Acquire (or, with newOwner,
// AcquireNew) queued it for owner and lease. If w was granted the lock
// meanwhile, it passes the lock on to the next live waiter before it
// returns (see handOn), and reports true. Repeating it is harmless.
func (k Keys) Leave(ctx context.Context, rdb redis.Scripter, w Waiter, owner string, lease time.Duration, newOwner bool) (bool, error) {
	ms, err := leaseMillis(lease)
	if err != nil {
		return false, err
	}
	shared := "1"
	if newOwner {
		shared = "0"
	}
	keys := []string{k.Hash, k.Fence, k.Queue, k.Granted}
	n, err := leaveScript.Run(ctx, rdb, keys, w.ID, owner, k.publish, w.record(owner, ms, k.aliveTTL.Milliseconds(), !newOwner), shared).Int64()
	if err != nil {
		return false, fmt.Errorf("reentrant: leave %q: %w", k.Name, err)
	}
	if n == 2 {
		k.handOn(ctx, rdb)
	}
	return n > 0, nil
}

// formatToken writes a token as the scripts compare it with the counter.
func formatToken(token uint64) string { return strconv.FormatUint(token, 10) }

// Inspect reads the lock's holders, their counts, its TTL and its last token.
func (k Keys) Inspect(ctx context.Context, rdb redis.Scripter) (State, error) {
	reply, err := inspectScript.Run(ctx, rdb, []string{k.Hash, k.Fence}).Slice()
	if err != nil {
		return State{}, fmt.Errorf("reentrant: inspect %q: %w", k.Name, err)
	}
	return parseState(reply)
}

func parseState(reply []any) (State, error) {
	if len(reply) < 2 || len(reply)%2 != 0 {
		return State{}, fmt.Errorf("reentrant: inspect: unexpected reply %v", reply)
	}
	ttl, ok1 := reply[0].(int64)
	last, ok2 := reply[1].(int64)
	if !ok1 || !ok2 {
		return State{}, fmt.Errorf("reentrant: inspect: unexpected reply %v", reply)
	}
	st := State{Holders: map[string]int64{}, TTL: time.Duration(ttl) * time.Millisecond, LastToken: uint64(last)}
	for i := 2; i < len(reply); i += 2 {
		owner, _ := reply[i].(string)
		count, err := strconv.ParseInt(fmt.Sprint(reply[i+1]), 10, 64)
		if err != nil {
			return State{}, fmt.Errorf("reentrant: inspect: count of %q: %w", owner, err)
		}
		st.Holders[owner] = count
	}
	return st, nil
}
