package reentrant

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The messages Redisson publishes on lock channels (LockPubSub), as the
// decimal strings its LongCodec writes.
const (
	// RedissonUnlockMessage is published by an RLock's final unlock and
	// forceUnlock, and a read lock's: one waiter may take the lock.
	RedissonUnlockMessage = "0"
	// RedissonReadUnlockMessage is published by a write lock's final unlock
	// (RReadWriteLock): every waiter may try, readers may share.
	RedissonReadUnlockMessage = "1"
)

// RedissonLockChannelPrefix and RedissonUnlockLatchPrefix are the prefixes
// Redisson puts, through RedissonPrefixName, before a lock's name to name its
// channel and its unlock latches.
const (
	RedissonLockChannelPrefix = "redisson_lock__channel"
	RedissonUnlockLatchPrefix = "redisson_unlock_latch"
)

// RedissonWatchdogTimeout is Redisson's default lockWatchdogTimeout: the
// lease of a lock taken without one, renewed every third of it.
const RedissonWatchdogTimeout = 30 * time.Second

// DefaultRedissonLatchTTL is how long an unlock latch lasts when a
// RedissonNamespace leaves LatchTTL zero: the longest Redisson 4.7.0's
// default configuration gives it, retryAttempts × (timeout + retry delay) =
// 4 × (3000 ms + at most 2000 ms). Redisson draws the retry delay at random
// (between 1000 and 2000 ms), so its latches last 16 to 20 s; a latch must
// outlast the window in which a client may resend one unlock.
const DefaultRedissonLatchTTL = 20 * time.Second

// ErrInvalidClientID reports a client ID that is empty or contains ':',
// which would make two holders' fields alike.
var ErrInvalidClientID = errors.New("reentrant: invalid Redisson client ID")

// ErrInvalidOwner reports an empty owner, or a RedissonField not made by
// NewRedissonField.
var ErrInvalidOwner = errors.New("reentrant: invalid Redisson owner")

// ErrInvalidRequestID reports an empty unlock request ID.
var ErrInvalidRequestID = errors.New("reentrant: invalid unlock request ID")

// RedissonPrefixName is Redisson's RedissonObject.prefixName: prefix, a
// colon and name, with name in braces unless it already contains '{'. (So
// "lock{a}" keeps its own hash tag, while "{a" gets none: Redis then hashes
// the whole string.)
func RedissonPrefixName(prefix, name string) string {
	if strings.Contains(name, "{") {
		return prefix + ":" + name
	}
	return prefix + ":{" + name + "}"
}

// RedissonField is a holder's field in a lock's hash: "<clientID>:<owner>".
// Redisson writes "<UUID of the Redisson instance>:<thread ID>"; a Go
// process takes one client ID for its life (a UUID, like Redisson) and an
// owner per hold. The client ID has no ':', so a field names exactly one
// (clientID, owner) pair. The zero value is invalid.
type RedissonField struct{ s string }

// NewRedissonField makes the field of owner in the client clientID. It
// returns an error wrapping ErrInvalidClientID when clientID is empty or
// contains ':', or ErrInvalidOwner when owner is empty.
func NewRedissonField(clientID, owner string) (RedissonField, error) {
	switch {
	case clientID == "":
		return RedissonField{}, fmt.Errorf("%w: empty", ErrInvalidClientID)
	case strings.Contains(clientID, ":"):
		return RedissonField{}, fmt.Errorf("%w: %q contains ':'", ErrInvalidClientID, clientID)
	case owner == "":
		return RedissonField{}, fmt.Errorf("%w: empty", ErrInvalidOwner)
	}
	return RedissonField{s: clientID + ":" + owner}, nil
}

// String is the field as stored in the hash.
func (f RedissonField) String() string { return f.s }

// check refuses the zero RedissonField (ErrInvalidOwner).
func (f RedissonField) check() error {
	if f.s == "" {
		return fmt.Errorf("%w: zero RedissonField", ErrInvalidOwner)
	}
	return nil
}

// RedissonNamespace says how the Redisson deployment a Go service shares
// locks with publishes, and how long unlock latches last.
//
// It names locks in Redisson's RLock wire format, as Redisson 4.7.0 keeps
// it in Redis (Java sources: RedissonLock, RedissonBaseLock,
// RedissonObject.prefixName, LockPubSub, renewal.LockTask). A lock named N
// is:
//
//	N                                  a hash, field "<clientID>:<owner>" → hold count,
//	                                   the lease as its PEXPIRE
//	redisson_lock__channel:{N}         its channel: "0" on every final unlock and forceUnlock
//	redisson_unlock_latch:{N}:<reqID>  an unlock's result, "0" still held or "1" released,
//	                                   for the latch TTL, so a resent unlock replays it
//
// where "{N}" is N in braces unless N already contains '{', in which case it
// is N as it is (RedissonPrefixName). An acquire under a request ID (see
// Acquire) keeps its outcome, "taken", "refused" or "gone", under the same
// latch name: Java reads only its own requests' latches, so it never sees
// one. The scripts are written from this
// format, not taken from Redisson; reentrant/testdata/redisson holds
// Redisson's own scripts as the conformance tests' oracle. They leave the
// state Redisson's leave, with one deliberate difference: a lock's expiry
// only moves later. Redisson's re-entry, partial unlock and renewal set
// the lease they are given, so a shorter one cuts the lease another hold
// of the same field was granted, and a holder that counts on that lease
// would outlive its lock; a Java client reads a longer PTTL only as a
// longer wait, which an unlock message ends.
type RedissonNamespace struct {
	// Sharded publishes with SPUBLISH, and says waiters must SSUBSCRIBE.
	// Redisson does so only on a cluster, when its shardedSubscriptionMode
	// is ON, or AUTO (the default) and the server answers PUBSUB
	// SHARDNUMSUB (Redis 7 or later): PublishSubscribeService.
	// checkShardingSupport, probed once by ClusterConnectionManager. A
	// single node, Sentinel or replicated setup always uses PUBLISH.
	Sharded bool
	// LatchTTL is how long an unlock's latch lasts; zero means
	// DefaultRedissonLatchTTL.
	LatchTTL time.Duration
}

// RedissonKeys are the key and channel names of one lock in Redisson's
// format, and how to publish on its channel. The zero value is not usable;
// get one from RedissonNamespace.Keys.
type RedissonKeys struct {
	// Name is the lock's name, as Java's getLock(name) takes it.
	Name string
	// Hash is the lock's hash: the name itself (Redisson's getRawName with
	// the default NameMapper).
	Hash string
	// Channel is where unlocks are published: RedissonPrefixName of
	// RedissonLockChannelPrefix and the name.
	Channel string
	// Sharded says unlocks are published with SPUBLISH, so waiters must
	// SSUBSCRIBE to Channel; otherwise PUBLISH and SUBSCRIBE.
	Sharded bool

	latchPrefix string
	latchTTL    time.Duration
}

// Keys names the lock called name in Redisson's format. Any name Redisson
// takes is accepted, but for the empty name (ErrInvalidName), and, in a
// Sharded namespace, a name whose channel would hash to another cluster
// slot than its hash: one with '}' but no '{', or with a '{' not closed by
// a later '}' around at least one byte. Redisson's own scripts fail with
// CROSSSLOT on such a name in a cluster (ErrInvalidName).
func (ns RedissonNamespace) Keys(name string) (RedissonKeys, error) {
	if name == "" {
		return RedissonKeys{}, fmt.Errorf("%w: empty", ErrInvalidName)
	}
	k := RedissonKeys{
		Name:        name,
		Hash:        name,
		Channel:     RedissonPrefixName(RedissonLockChannelPrefix, name),
		Sharded:     ns.Sharded,
		latchPrefix: RedissonPrefixName(RedissonUnlockLatchPrefix, name) + ":",
		latchTTL:    ns.LatchTTL,
	}
	if k.latchTTL <= 0 {
		k.latchTTL = DefaultRedissonLatchTTL
	}
	if ns.Sharded && hashTag(k.Hash) != hashTag(k.Channel) {
		return RedissonKeys{}, fmt.Errorf("%w: %q and its channel %q hash to different cluster slots", ErrInvalidName, name, k.Channel)
	}
	return k, nil
}

// hashTag is the part of key that Redis Cluster hashes to find its slot:
// what lies between the first '{' and the first '}' after it, when that is
// not empty, else the whole key.
func hashTag(key string) string {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if n := strings.IndexByte(key[open+1:], '}'); n > 0 {
			return key[open+1 : open+1+n]
		}
	}
	return key
}

// LatchKey is the key of unlock request requestID's latch (Redisson's
// getUnlockLatchName).
func (k RedissonKeys) LatchKey(requestID string) string { return k.latchPrefix + requestID }

// LatchTTL is how long an unlock's latch lasts.
func (k RedissonKeys) LatchTTL() time.Duration { return k.latchTTL }

// IsRedissonWake reports whether payload, received on a lock's channel,
// tells its waiters to try again: an unlock (RedissonUnlockMessage) or a
// write lock's unlock (RedissonReadUnlockMessage).
func IsRedissonWake(payload string) bool {
	return payload == RedissonUnlockMessage || payload == RedissonReadUnlockMessage
}

// publishCommand is the command that publishes the lock's unlocks.
func (k RedissonKeys) publishCommand() string {
	if k.Sharded {
		return "spublish"
	}
	return "publish"
}

// check refuses the zero RedissonKeys (ErrInvalidName).
func (k RedissonKeys) check() error {
	if k.Hash == "" {
		return fmt.Errorf("%w: zero RedissonKeys", ErrInvalidName)
	}
	return nil
}
