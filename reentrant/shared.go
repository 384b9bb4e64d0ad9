package reentrant

import (
	"errors"
	"fmt"
	"time"
)

// Kind is the kind of a shared resource: a read-write lock or a
// semaphore. A plain lock, a read-write lock and a semaphore of one name
// are distinct resources, with distinct keys.
type Kind string

const (
	// KindRW is a read-write lock: a resource of size WriteWeight, where a
	// read takes 1 and a write takes WriteWeight.
	KindRW Kind = "rw"
	// KindSemaphore is a semaphore: a resource whose size (its permits)
	// is stored in Redis, where a hold takes the permits it asked for.
	KindSemaphore Kind = "sem"
)

// Mode is what a hold of a shared resource is; it names the hold
// together with its owner, so one owner may hold a read and a write of
// one read-write lock at once (a read inside its own write).
type Mode string

const (
	// ModeRead is a shared hold of a read-write lock, of weight 1.
	ModeRead Mode = "r"
	// ModeWrite is the exclusive hold of a read-write lock, of weight
	// WriteWeight.
	ModeWrite Mode = "w"
	// ModePermits is a hold of a semaphore's permits, of weight the
	// permits. Permits are not re-entered: each hold needs its own owner.
	ModePermits Mode = "p"
)

// WriteWeight is a read-write lock's size and the weight of its write: a
// write fits only when nobody holds, and a read fits unless a write holds.
// Lua numbers hold it, and sums of it with any number of reads, exactly.
const WriteWeight int64 = 1 << 31

// MaxSize is the largest size of a semaphore.
const MaxSize = WriteWeight

// Errors of the shared resources, each reported before anything is
// written.
var (
	// ErrInvalidKind reports a kind other than KindRW and KindSemaphore,
	// or what the resource's kind does not have (a read of a semaphore,
	// a size for a read-write lock).
	ErrInvalidKind = errors.New("reentrant: invalid resource kind")
	// ErrInvalidPermits reports permits below 1, or above the semaphore's
	// size (the one stored in Redis, or MaxSize).
	ErrInvalidPermits = errors.New("reentrant: invalid number of permits")
	// ErrInvalidSize reports a semaphore size below 1 or above MaxSize.
	ErrInvalidSize = errors.New("reentrant: invalid semaphore size")
	// ErrPermitsHeld reports an acquire of permits by an owner that holds
	// permits of the semaphore already: permits are not re-entered.
	ErrPermitsHeld = errors.New("reentrant: owner already holds permits")
)

// SharedKeys are the key and channel names of one shared resource
// (see the package doc's Shared resources), and how to publish its
// grants. Like Keys, they are names, not a resource. The zero value is not
// usable; get one from Namespace.SharedKeys.
type SharedKeys struct {
	// Name is the resource's name as the user gave it.
	Name string
	// Kind is the resource's kind.
	Kind Kind
	// Hash is the key of the hash of holds: one field per hold,
	// "<mode>:<owner>", and 'used', the sum of their weights.
	Hash string
	// Leases is the key of the sorted set of the holds' lease deadlines,
	// in server milliseconds.
	Leases string
	// Queue is the key of the list of waiting calls, oldest first.
	Queue string
	// Fence is the key of the fencing-token counter.
	Fence string
	// HoldIDs is the key of the hold-ID counter: every hold gets an ID of
	// its own from it, which the scripts act on the hold under.
	HoldIDs string
	// Size is the key of a semaphore's size; empty for a read-write lock.
	Size string

	lock          Keys  // the plain lock of the same name: channels and settings
	size          int64 // the size to store when none is; 0 for none known
	requestPrefix string
}

// SharedKeys validates kind and name and derives the resource's keys. For
// a semaphore, WithSize gives the size its first call stores.
func (ns Namespace) SharedKeys(kind Kind, name string) (SharedKeys, error) {
	if kind != KindRW && kind != KindSemaphore {
		return SharedKeys{}, fmt.Errorf("%w: %q", ErrInvalidKind, kind)
	}
	lock, err := ns.Keys(name)
	if err != nil {
		return SharedKeys{}, err
	}
	hash := lock.Hash + ":" + string(kind)
	k := SharedKeys{Name: name, Kind: kind, Hash: hash, Leases: hash + ":leases", Queue: hash + ":queue",
		Fence: hash + ":fence", HoldIDs: hash + ":ids", lock: lock, requestPrefix: hash + ":req:"}
	if kind == KindRW {
		k.size = WriteWeight
	} else {
		k.Size = hash + ":size"
	}
	return k, nil
}

// WithSize is k with the size a semaphore handle was made with: the first
// call that finds no size in Redis stores it. Without one, such a call
// grants nothing until a size is stored (SetSize, or an Acquire).
func (k SharedKeys) WithSize(size int64) (SharedKeys, error) {
	if k.Kind != KindSemaphore {
		return SharedKeys{}, fmt.Errorf("%w: a %s has no size to set", ErrInvalidKind, k.Kind)
	}
	if size < 1 || size > MaxSize {
		return SharedKeys{}, fmt.Errorf("%w: %d, the range is 1 to %d", ErrInvalidSize, size, MaxSize)
	}
	k.size = size
	return k, nil
}

// SizeGiven is the size a call stores when Redis has none: WithSize's for
// a semaphore (0 before it), WriteWeight for a read-write lock.
func (k SharedKeys) SizeGiven() int64 { return k.size }

// GrantChannel is the channel on which client's waiters get their grants:
// the plain lock's of the same name, so that a client's grant line serves
// every kind.
func (k SharedKeys) GrantChannel(client string) string { return k.lock.GrantChannel(client) }

// AliveKey is the liveness key of client's waiters for this resource, in a
// namespace with ReceiversElsewhere.
func (k SharedKeys) AliveKey(client string) string { return k.Hash + ":alive:" + client }

// AliveTTL is how long a waiter's look keeps its client's liveness key, or
// zero where there is none (see Keys.AliveTTL).
func (k SharedKeys) AliveTTL() time.Duration { return k.lock.aliveTTL }

// Waiter makes the waiter id of client (see Keys.Waiter). id must contain
// neither a space nor a comma.
func (k SharedKeys) Waiter(id, client string) Waiter {
	w := Waiter{ID: id, Channel: k.GrantChannel(client)}
	if k.lock.aliveTTL > 0 {
		w.Alive = k.AliveKey(client)
	}
	return w
}

// RequestKey is the key that remembers the result of request id.
func (k SharedKeys) RequestKey(id string) string { return k.requestPrefix + id }

// keys are k's keys in the order the scripts take them: the hash, the
// leases, the queue and the counter, then extra (the hold-ID counter
// first, for a script that can take or grant), then a semaphore's size.
func (k SharedKeys) keys(extra ...string) []string {
	keys := append([]string{k.Hash, k.Leases, k.Queue, k.Fence}, extra...)
	if k.Size != "" {
		keys = append(keys, k.Size)
	}
	return keys
}

// Read is the mode a read of a read-write lock asks for.
func (k SharedKeys) Read() (SharedMode, error) { return k.mode(KindRW, ModeRead, 1) }

// Write is the mode a write of a read-write lock asks for.
func (k SharedKeys) Write() (SharedMode, error) { return k.mode(KindRW, ModeWrite, WriteWeight) }

// Permits is the mode an acquire of n permits of a semaphore asks for. n
// above the size stored in Redis is refused by Acquire.
func (k SharedKeys) Permits(n int64) (SharedMode, error) {
	if n < 1 || n > MaxSize {
		return SharedMode{}, fmt.Errorf("%w: %d, the range is 1 to the size", ErrInvalidPermits, n)
	}
	return k.mode(KindSemaphore, ModePermits, n)
}

// ModeOf is the mode grant g was a grant of, on k: what a client
// releases when a grant reaches it for a waiter that has gone.
func (k SharedKeys) ModeOf(g Grant) (SharedMode, error) {
	if g.Kind != k.Kind || g.Lock != k.Name {
		return SharedMode{}, fmt.Errorf("%w: a grant of %s %q is not one of %s %q", ErrInvalidKind, g.Kind, g.Lock, k.Kind, k.Name)
	}
	switch g.Mode {
	case ModeRead:
		return k.Read()
	case ModeWrite:
		return k.Write()
	}
	return k.Permits(g.Weight)
}

// mode is k's SharedMode of mode and weight, which a resource of kind has.
func (k SharedKeys) mode(kind Kind, mode Mode, weight int64) (SharedMode, error) {
	if k.Kind != kind {
		return SharedMode{}, fmt.Errorf("%w: a %s has no mode %q", ErrInvalidKind, k.Kind, mode)
	}
	return SharedMode{keys: k, mode: mode, weight: weight}, nil
}

// SharedMode is what one mode of hold of a shared resource asks for: a
// read or a write of a read-write lock, or some permits of a semaphore.
// Its operations mirror Keys': the same calls, results and replay rules.
// Get one from SharedKeys.Read, Write or Permits.
type SharedMode struct {
	keys   SharedKeys
	mode   Mode
	weight int64
}

// Keys are the mode's resource.
func (s SharedMode) Keys() SharedKeys { return s.keys }

// Mode is the mode's Mode: read, write or permits.
func (s SharedMode) Mode() Mode { return s.mode }

// Weight is how much of the resource's size a hold in the mode takes.
func (s SharedMode) Weight() int64 { return s.weight }
