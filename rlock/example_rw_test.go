package rlock_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonlock/baton/rlock"
)

// Reads share, the write holds alone, and a write that queues is not
// overtaken by the reads that come after it.
func ExampleRWLock() {
	rdb, done := exampleRedis()
	defer done()
	locks, err := rlock.New(rdb)
	if err != nil {
		panic(err)
	}
	defer locks.Close()
	ctx := context.Background()
	rw := locks.RWLock("orders")

	r1, _ := rw.RLock(ctx)
	r2, err := rw.RLock(ctx) // another owner: reads share
	fmt.Println("two reads:", err)

	written := make(chan *rlock.Lock)
	go func() {
		w, err := rw.Lock(ctx) // waits for both reads
		if err != nil {
			panic(err)
		}
		written <- w
	}()
	waitQueued(func() int64 { st, _ := rw.Inspect(ctx); return st.Queued })
	_, err = rw.TryRLock(ctx) // a read never passes a queued write
	fmt.Println("read behind a queued write:", errors.Is(err, rlock.ErrNotObtained))

	_ = r1.Unlock(ctx)
	_ = r2.Unlock(ctx)
	w := <-written
	fmt.Println("write token above the reads':", w.Token() > r1.Token())
	_ = w.Unlock(ctx)

	r3, _ := rw.RLock(ctx)
	fmt.Println("a read carries the last write's token:", r3.Token() == w.Token())
	_ = r3.Unlock(ctx)
	// Output:
	// two reads: <nil>
	// read behind a queued write: true
	// write token above the reads': true
	// a read carries the last write's token: true
}

// DoRead and Do are the everyday forms: take the read or the write, run
// the work with the hold's context, unlock whatever happens.
func ExampleRWLock_DoRead() {
	rdb, done := exampleRedis()
	defer done()
	locks, _ := rlock.New(rdb)
	defer locks.Close()
	ctx := context.Background()
	rw := locks.RWLock("catalog")

	err := rw.Do(ctx, func(ctx context.Context) error {
		fmt.Println("updating the catalog")
		return ctx.Err() // ctx ends if the write is lost
	})
	fmt.Println("write:", err)
	err = rw.DoRead(ctx, func(ctx context.Context) error {
		fmt.Println("reading the catalog")
		return ctx.Err()
	})
	fmt.Println("read:", err)
	// Output:
	// updating the catalog
	// write: <nil>
	// reading the catalog
	// read: <nil>
}

// A write inside a read only would wait for itself, so it is refused. A
// read inside the write is granted at once and stays after the write's
// Unlock: a downgrade, with no writer in between.
func ExampleRWLock_Lock() {
	rdb, done := exampleRedis()
	defer done()
	locks, _ := rlock.New(rdb)
	defer locks.Close()
	ctx := context.Background()
	rw := locks.RWLock("config")

	r, _ := rw.RLock(ctx)
	_, err := rw.Lock(r.Context()) // an upgrade: refused, nothing sent
	fmt.Println("write inside the read:", errors.Is(err, rlock.ErrUpgrade))
	_ = r.Unlock(ctx)

	w, _ := rw.Lock(ctx)
	r, err = rw.RLock(w.Context()) // past the queue, with the write's token
	fmt.Println("read inside the write:", err, r.Token() == w.Token())
	_ = w.Unlock(ctx)
	st, _ := rw.Inspect(ctx)
	fmt.Println("after the write's Unlock, writer:", st.Writer != "", "reads:", len(st.Readers))
	fmt.Println("unlock the read:", r.Unlock(ctx))
	// Output:
	// write inside the read: true
	// read inside the write: <nil> true
	// after the write's Unlock, writer: false reads: 1
	// unlock the read: <nil>
}
