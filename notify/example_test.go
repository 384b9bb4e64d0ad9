package notify_test

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/notify"
)

// A waiter subscribes before it checks, so that a release published after the
// check cannot be missed; the releaser publishes on the channel.
func Example() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	hub, err := notify.New(rdb, notify.Options{})
	if err != nil {
		return
	}
	defer hub.Close()

	sub, err := hub.Subscribe(ctx, "resource:released")
	if err != nil {
		return
	}
	defer sub.Close()
	for !rdb.SetNX(ctx, "resource", "me", 10*time.Second).Val() {
		// A timeout only bounds the sleep: check again either way.
		if err := sub.Wait(ctx, time.Second); err != nil && !errors.Is(err, notify.ErrWaitTimeout) {
			return
		}
	}
	// ... use the resource, then release it and wake one waiter:
	rdb.Del(ctx, "resource")
	rdb.Publish(ctx, "resource:released", "")
}
