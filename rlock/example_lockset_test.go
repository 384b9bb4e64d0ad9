package rlock_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonlock/baton/rlock"
)

func ExampleClient_LockAll() {
	rdb, done := exampleRedis()
	defer done()
	locks, err := rlock.New(rdb)
	if err != nil {
		panic(err)
	}
	defer locks.Close()
	ctx := context.Background()

	// A transfer locks both accounts, all or nothing. Every caller takes
	// them in the same canonical order, whatever order it names them in,
	// so two opposite transfers cannot deadlock.
	set, err := locks.LockAll(ctx, []string{"account/7", "account/3", "account/7"})
	if err != nil {
		panic(err)
	}
	fmt.Println("members:", len(set.Names()))
	fmt.Println("a token each:", set.Token("account/3") > 0 && set.Token("account/7") > 0)

	// Another caller's set overlapping this one is not obtained, and holds
	// nothing afterwards.
	_, err = locks.TryLockAll(ctx, []string{"account/3", "account/9"})
	fmt.Println("overlap not obtained:", errors.Is(err, rlock.ErrNotObtained))
	st, _ := locks.Inspect(ctx, "account/9")
	fmt.Println("account/9 held:", len(st.Holders) > 0)

	// The set's Context re-enters its members.
	inner, err := locks.Lock(set.Context(), "account/7")
	if err != nil {
		panic(err)
	}
	fmt.Println("same token on re-entry:", inner.Token() == set.Token("account/7"))
	_ = inner.Unlock(ctx)
	fmt.Println("unlock:", set.Unlock(ctx))
	// Output:
	// members: 2
	// a token each: true
	// overlap not obtained: true
	// account/9 held: false
	// same token on re-entry: true
	// unlock: <nil>
}

func ExampleClient_DoAll() {
	rdb, done := exampleRedis()
	defer done()
	locks, _ := rlock.New(rdb)
	defer locks.Close()

	err := locks.DoAll(context.Background(), []string{"stock/apples", "stock/pears"}, func(ctx context.Context) error {
		// ctx ends if any member is lost, or the caller gives up.
		fmt.Println("both held")
		return ctx.Err()
	})
	fmt.Println("err:", err)
	// Output:
	// both held
	// err: <nil>
}
