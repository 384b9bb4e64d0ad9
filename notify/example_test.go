package notify_test

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/notify"
)

// A waiter subscribes under its own ID before it asks to be served, so an
// answer published after the ask cannot be missed. The server side
// publishes "<id> <payload>"; a resync means messages may have been lost
// while the connection was down, so the waiter asks again.
func Example() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	hub, err := notify.New(rdb, notify.Options{
		// A message for a waiter that has gone: hand back what it offered.
		Unclaimed: func(channel, msg string) {},
	})
	if err != nil {
		return
	}
	defer hub.Close()

	sub, err := hub.Subscribe(ctx, "tickets", "waiter-7")
	if err != nil {
		return
	}
	defer sub.Close()
	for {
		rdb.RPush(ctx, "ticket-requests", "waiter-7") // served: PUBLISH tickets "waiter-7 <ticket>"
		d, err := sub.Wait(ctx, 5*time.Second)
		if err != nil || !d.Resync {
			_ = d.Payload // the ticket
			return
		}
	}
}
