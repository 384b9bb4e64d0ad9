package rlock_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonlock/baton/rlock"
)

func ExampleSemaphore() {
	rdb, done := exampleRedis()
	defer done()
	locks, err := rlock.New(rdb)
	if err != nil {
		panic(err)
	}
	defer locks.Close()
	ctx := context.Background()

	gpus := locks.Semaphore("gpu-pool", 4) // 4 permits, unless Redis has a size already
	p, err := gpus.Acquire(ctx, 3)
	if err != nil {
		panic(err)
	}
	fmt.Println("held:", p.Count())
	// Work under p.Context(): it ends if the permits are lost.
	_, err = gpus.TryAcquire(ctx, 2)
	fmt.Println("2 more while 3 of 4 are held:", errors.Is(err, rlock.ErrNotObtained))
	_, err = gpus.Acquire(ctx, 5)
	fmt.Println("5 of 4:", errors.Is(err, rlock.ErrInvalidOption))

	if err := gpus.SetSize(ctx, 5); err != nil { // for every client
		panic(err)
	}
	q, err := gpus.TryAcquire(ctx, 2)
	if err != nil {
		panic(err)
	}
	st, _ := gpus.Inspect(ctx)
	fmt.Println("size:", st.Size, "held:", st.Held, "later grants fence higher:", q.Token() > p.Token())
	fmt.Println("release:", p.Release(ctx), q.Release(ctx))
	fmt.Println("second release is ErrNotHeld:", errors.Is(p.Release(ctx), rlock.ErrNotHeld))
	// Output:
	// held: 3
	// 2 more while 3 of 4 are held: true
	// 5 of 4: true
	// size: 5 held: 5 later grants fence higher: true
	// release: <nil> <nil>
	// second release is ErrNotHeld: true
}

// Strict FIFO: a waiter at the head of the queue is not overtaken, even by
// a smaller ask that would fit, and a release admits it.
func ExampleSemaphore_Acquire() {
	rdb, done := exampleRedis()
	defer done()
	locks, _ := rlock.New(rdb)
	defer locks.Close()
	ctx := context.Background()
	slots := locks.Semaphore("build-slots", 4)

	three, _ := slots.Acquire(ctx, 3)
	granted := make(chan *rlock.Permit)
	go func() {
		p, err := slots.Acquire(ctx, 2) // 1 of 4 free: it queues
		if err != nil {
			panic(err)
		}
		granted <- p
	}()
	waitQueued(func() int64 { st, _ := slots.Inspect(ctx); return st.Queued })
	_, err := slots.TryAcquire(ctx, 1) // 1 is free, but someone is queued
	fmt.Println("ask for 1 behind the queued 2:", errors.Is(err, rlock.ErrNotObtained))

	_ = three.Release(ctx) // admits the head
	two := <-granted
	fmt.Println("queued ask granted:", two.Count())
	_ = two.Release(ctx)
	// Output:
	// ask for 1 behind the queued 2: true
	// queued ask granted: 2
}
