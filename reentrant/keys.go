package reentrant

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// DefaultPrefix is the key prefix used when a Namespace leaves Prefix empty.
const DefaultPrefix = "baton:"

// MaxNameLen is the longest lock name accepted, in bytes.
const MaxNameLen = 1024

// DefaultAliveTTL is how long a waiting client's liveness key lasts after
// its last look, when a Namespace leaves AliveTTL zero: a waiter that
// crashed is skipped by the grants made this long after its last look.
const DefaultAliveTTL = 3 * time.Second

// DefaultRequestTTL is how long a request's result is remembered for replay
// when a Namespace leaves RequestTTL zero. It must outlast the window in which
// the Redis client may resend one call.
const DefaultRequestTTL = 15 * time.Second

// ErrInvalidName reports a lock name that is empty, contains '{' or '}', or is
// longer than MaxNameLen bytes.
var ErrInvalidName = errors.New("reentrant: invalid lock name")

// ErrInvalidPrefix reports a key prefix containing '{' or '}', which would
// move the hash tag away from the lock name.
var ErrInvalidPrefix = errors.New("reentrant: invalid key prefix")

// Namespace says where a set of locks lives and how releases are published.
type Namespace struct {
	// Prefix starts every key; empty means DefaultPrefix.
	Prefix string
	// Sharded publishes grants with SPUBLISH (Redis 7 sharded pub/sub)
	// instead of PUBLISH, on channels in the lock's slot.
	Sharded bool
	// ReceiversElsewhere says a waiter's subscription may be on another node
	// than the one that runs the grant, while the message still reaches it:
	// PUBLISH on a cluster (it reaches every node, but counts this one's
	// receivers), or a Sentinel client whose connections may still be on a
	// demoted master (replicas get the masters' messages). The receiver
	// count cannot judge liveness then: a message counted by nobody may
	// still arrive, so it cannot be taken back. Liveness keys judge it
	// instead. Each waiter's look sets its client's liveness key for the
	// lock (Keys.AliveKey) for AliveTTL, a grant goes only to a waiter whose
	// key exists, and every grant published is kept.
	ReceiversElsewhere bool
	// AliveTTL is how long a liveness key lasts after a look, with
	// ReceiversElsewhere; zero means DefaultAliveTTL. A waiter must look
	// again well within it (Keys.AliveTTL).
	AliveTTL time.Duration
	// RequestTTL is how long request results are kept for replay; zero means
	// DefaultRequestTTL.
	RequestTTL time.Duration
}

// Keys are the key and channel names of one named lock, and how to publish
// on its channel. They are names, not a lock: every operation on them is a
// script call that takes the Redis client.
// The zero value is not usable; get one from Namespace.Keys.
type Keys struct {
	// Name is the lock name as the user gave it.
	Name string
	// Hash is the key of the hash holding owner → hold count.
	Hash string
	// Fence is the key of the fencing-token counter.
	Fence string
	// Queue is the key of the list of waiting calls, oldest first: one
	// record each, with what its grant needs.
	Queue string
	// Granted is the key naming the last waiter granted the lock, and its
	// token, until the waiter's look claims the grant or its leave gives
	// the count back: a waiter that missed its grant message finds it, and
	// the grant's one count is given back at most once, never another
	// call's count of the same owner.
	Granted string
	// Wake is the key of the lock's wake records: waiters whose looks
	// did not queue (Waiter.Unqueued), each woken once by a script that
	// frees the lock, never granted from there (see the package doc's
	// Quorum mode).
	Wake string

	requestPrefix string
	grantPrefix   string
	publish       string
	requestTTL    time.Duration
	aliveTTL      time.Duration // zero: liveness is the receiver count
}

// ValidateName returns an error wrapping ErrInvalidName when name cannot be a
// lock name.
func ValidateName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrInvalidName)
	case len(name) > MaxNameLen:
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrInvalidName, len(name), MaxNameLen)
	case strings.ContainsAny(name, "{}"):
		return fmt.Errorf("%w: %q contains '{' or '}', which would break its hash tag", ErrInvalidName, name)
	}
	return nil
}

// Keys validates name and derives its keys.
func (ns Namespace) Keys(name string) (Keys, error) {
	if err := ValidateName(name); err != nil {
		return Keys{}, err
	}
	prefix := ns.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if strings.ContainsAny(prefix, "{}") {
		return Keys{}, fmt.Errorf("%w: %q", ErrInvalidPrefix, prefix)
	}
	ttl := ns.RequestTTL
	if ttl <= 0 {
		ttl = DefaultRequestTTL
	}
	// On a single node, or with PUBLISH on a cluster, a client's grants of
	// every lock share one channel, subscribed once for the client's
	// lifetime. SPUBLISH must stay in the lock's slot: one channel per
	// client and lock.
	publish := "publish"
	var aliveTTL time.Duration
	switch {
	case ns.Sharded:
		publish = "spublish"
	case ns.ReceiversElsewhere:
		publish, aliveTTL = "publish-alive", ns.AliveTTL
		if aliveTTL <= 0 {
			aliveTTL = DefaultAliveTTL
		}
	}
	k := Keys{Name: name, publish: publish, requestTTL: ttl, aliveTTL: aliveTTL}
	k.name(prefix, ns.Sharded)
	return k, nil
}

// name derives k's key and channel names from prefix and k.Name. Every
// Lock derives them, so they cost one allocation, not one each: they are
// slices of one string, laid end to end, and the hash key is the start of
// the fence key.
func (k *Keys) name(prefix string, sharded bool) {
	hashLen := len(prefix) + len("{") + len(k.Name) + len("}")
	var b strings.Builder
	b.Grow(6*hashLen + len(":fence:queue:granted:wake:req::grant:") + len(prefix) + len("grant:"))
	key := func(suffix string) (from, to int) {
		from = b.Len()
		b.WriteString(prefix)
		b.WriteByte('{')
		b.WriteString(k.Name)
		b.WriteByte('}')
		b.WriteString(suffix)
		return from, b.Len()
	}
	fence, fenceEnd := key(":fence")
	queue, queueEnd := key(":queue")
	granted, grantedEnd := key(":granted")
	wake, wakeEnd := key(":wake")
	req, reqEnd := key(":req:")
	grant, grantEnd := b.Len(), 0
	if sharded {
		grant, grantEnd = key(":grant:")
	} else {
		b.WriteString(prefix)
		b.WriteString("grant:")
		grantEnd = b.Len()
	}
	all := b.String()
	k.Hash, k.Fence = all[fence:fence+hashLen], all[fence:fenceEnd]
	k.Queue, k.Granted, k.Wake = all[queue:queueEnd], all[granted:grantedEnd], all[wake:wakeEnd]
	k.requestPrefix, k.grantPrefix = all[req:reqEnd], all[grant:grantEnd]
}

// GrantChannel is the channel on which client's waiters for this lock get
// their grants. client must not contain a space.
func (k Keys) GrantChannel(client string) string { return k.grantPrefix + client }

// AliveKey is the liveness key of client's waiters for this lock, in a
// namespace with ReceiversElsewhere.
func (k Keys) AliveKey(client string) string { return k.Hash + ":alive:" + client }

// AliveTTL is how long a waiter's look keeps its client's liveness key, or
// zero where the receiver count judges liveness and there is none. A
// waiter must look again well within it, or a grant skips it.
func (k Keys) AliveTTL() time.Duration { return k.aliveTTL }

// Waiter makes the waiter id of client: its grant channel, and its
// liveness key where the namespace uses them. client must not contain a
// space.
func (k Keys) Waiter(id, client string) Waiter {
	w := Waiter{ID: id, Channel: k.GrantChannel(client)}
	if k.aliveTTL > 0 {
		w.Alive = k.AliveKey(client)
	}
	return w
}

// RequestKey is the key that remembers the result of request id.
func (k Keys) RequestKey(id string) string { return k.requestPrefix + id }
