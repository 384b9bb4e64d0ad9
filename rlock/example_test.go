package rlock_test

import (
	"context"
	"errors"
	"fmt"
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
