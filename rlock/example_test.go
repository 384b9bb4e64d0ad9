package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/rlock"
)

// The examples run on an in-process miniredis so they work anywhere; pass a
// client for a real Redis in production.
func exampleRedis() (*redis.Client, func()) {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	return rdb, func() { _ = rdb.Close(); mr.Close() }
}

// waitQueued returns once queued, an Inspect's queue length, is above 0,
// so that an example can show what happens to a call made after a waiter.
func waitQueued(queued func() int64) {
	for queued() == 0 {
		time.Sleep(time.Millisecond)
	}
}

func ExampleClient_Lock() {
	rdb, done := exampleRedis()
	defer done()
	locks, err := rlock.New(rdb)
	if err != nil {
		panic(err)
	}
	defer locks.Close()
	ctx := context.Background()

	l, err := locks.Lock(ctx, "orders/42")
	if err != nil {
		panic(err)
	}
	// A nested call with the lock's context re-enters instead of deadlocking.
	inner, err := locks.Lock(l.Context(), "orders/42")
	if err != nil {
		panic(err)
	}
	fmt.Println("same token on re-entry:", inner.Token() == l.Token())
	_ = inner.Unlock(ctx)
	fmt.Println("unlock:", l.Unlock(ctx))
	fmt.Println("second unlock is ErrNotHeld:", errors.Is(l.Unlock(ctx), rlock.ErrNotHeld))
	// Output:
	// same token on re-entry: true
	// unlock: <nil>
	// second unlock is ErrNotHeld: true
}

func ExampleClient_TryLock() {
	rdb, done := exampleRedis()
	defer done()
	locks, _ := rlock.New(rdb)
	defer locks.Close()
	ctx := context.Background()

	held, _ := locks.Lock(ctx, "report")
	_, err := locks.TryLock(ctx, "report") // another owner: one attempt only
	fmt.Println(errors.Is(err, rlock.ErrNotObtained))

	_ = held.Unlock(ctx)
	l, err := locks.TryLock(ctx, "report", rlock.WaitAtMost(time.Second))
	fmt.Println(err)
	_ = l.Unlock(ctx)
	// Output:
	// true
	// <nil>
}

// A holder learns of a lost lock through its context, like any other
// cancellation.
func ExampleLock_Context() {
	rdb, done := exampleRedis()
	defer done()
	locks, _ := rlock.New(rdb)
	defer locks.Close()
	ctx := context.Background()

	l, _ := locks.Lock(ctx, "migration")
	_, _ = locks.ForceUnlock(ctx, "migration") // an operator steps in
	<-l.Context().Done()
	fmt.Println(errors.Is(context.Cause(l.Context()), rlock.ErrLockLost))
	fmt.Println(errors.Is(l.Unlock(ctx), rlock.ErrLockLost))
	// Output:
	// true
	// true
}

// Do is the everyday form: take the lock, run the work with the lock's
// context, unlock whatever happens.
func ExampleClient_Do() {
	rdb, done := exampleRedis()
	defer done()
	locks, _ := rlock.New(rdb)
	defer locks.Close()

	err := locks.Do(context.Background(), "nightly-report", func(ctx context.Context) error {
		// ctx ends if the lock is lost: pass it to everything the work does.
		l, _ := rlock.FromContext(ctx) // for l.Token(), to fence writes
		fmt.Println("generating the report under", l.Name())
		return ctx.Err()
	})
	fmt.Println("err:", err)
	// Output:
	// generating the report under nightly-report
	// err: <nil>
}

// fencedStore is the storage a lock protects, in miniature. A holder can
// be paused between its last look at its context and its write (a GC
// pause, a VM freeze), so the store itself refuses a token lower than the
// highest it has seen.
type fencedStore struct {
	mu      sync.Mutex
	highest uint64
	value   string
}

func (s *fencedStore) Write(token uint64, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.highest {
		return fmt.Errorf("stale token %d < %d", token, s.highest)
	}
	s.highest, s.value = token, value
	return nil
}

// Fencing: pass Token to the store with every write. A holder that lost
// the lock while paused is refused, however late it wakes.
func ExampleLock_Token() {
	rdb, done := exampleRedis()
	defer done()
	locks, _ := rlock.New(rdb)
	defer locks.Close()
	ctx := context.Background()
	store := &fencedStore{}

	old, _ := locks.Lock(ctx, "ledger")
	_, _ = locks.ForceUnlock(ctx, "ledger") // old's holder is paused meanwhile
	next, _ := locks.Lock(ctx, "ledger")
	fmt.Println("new holder:", store.Write(next.Token(), "new"))
	fmt.Println("paused holder refused:", store.Write(old.Token(), "stale") != nil)
	_ = next.Unlock(ctx)
	// Output:
	// new holder: <nil>
	// paused holder refused: true
}
